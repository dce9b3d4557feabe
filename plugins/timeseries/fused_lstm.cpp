// The hand-written LSTM layer; see fused_lstm.hpp. Notation per step t:
// gates = x_t W_ih^T + b_ih + b_hh + h_{t-1} W_hh^T, split into i, f, g, o;
// i, f, o = sigmoid, g = tanh; c_t = f c_{t-1} + i g; h_t = o tanh(c_t).
#include "fused_lstm.hpp"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace gpusweep::timeseries {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Elements per parallel chunk of the element-wise loops: below this a loop
// is a few microseconds and a thread team would cost more than it saves.
constexpr int64_t kGrainElements = 16384;

// Matrix products as autocast runs a Linear: operands in the autocast dtype,
// result back in float32 for the element-wise work.
struct MatmulPrecision {
  bool lower = false;
  at::ScalarType dtype = at::kFloat;

  static MatmulPrecision current(const torch::Device& device) {
    MatmulPrecision p;
    if (device.is_cpu() && at::autocast::is_autocast_enabled(at::kCPU)) {
      p.lower = true;
      p.dtype = at::autocast::get_autocast_dtype(at::kCPU);
    }
    return p;
  }
  Tensor operand(const Tensor& t) const { return lower ? t.to(dtype) : t; }
  Tensor result(const Tensor& t) const { return lower ? t.to(at::kFloat) : t; }
};

// Rows [begin, end) of one step's element-wise forward: c and tanh(c) need
// the activated gates; h = o tanh(c) follows once tanh(c) is known.
void cell_state_rows(const float* gates, const float* c_prev, float* c, int64_t hidden,
                     int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const float* gi = gates + b * 4 * hidden;
    const float* gf = gi + hidden;
    const float* gg = gi + 2 * hidden;
    float* cb = c + b * hidden;
    if (c_prev == nullptr) {
      for (int64_t k = 0; k < hidden; ++k) cb[k] = gi[k] * gg[k];
    } else {
      const float* cp = c_prev + b * hidden;
      for (int64_t k = 0; k < hidden; ++k) cb[k] = gf[k] * cp[k] + gi[k] * gg[k];
    }
  }
}

void hidden_rows(const float* gates, const float* tanh_c, float* h, int64_t hidden, int64_t begin,
                 int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const float* go = gates + b * 4 * hidden + 3 * hidden;
    const float* tc = tanh_c + b * hidden;
    float* hb = h + b * hidden;
    for (int64_t k = 0; k < hidden; ++k) hb[k] = go[k] * tc[k];
  }
}

// Rows [begin, end) of one step's element-wise backward. dh: gradient
// reaching h_t from step t+1 (zero at the last step); dc: gradient reaching
// c_t from step t+1, replaced by the one reaching c_{t-1}; c_prev: c_{t-1}
// (zeros at the first step). Writes the pre-activation gate gradients.
void backward_rows(const float* gates, const float* tanh_c, const float* c_prev,
                   const float* grad_h, const float* dh, float* dc, float* dgates, int64_t hidden,
                   int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; ++b) {
    const float* gi = gates + b * 4 * hidden;
    const float* gf = gi + hidden;
    const float* gg = gi + 2 * hidden;
    const float* go = gi + 3 * hidden;
    float* di = dgates + b * 4 * hidden;
    float* df = di + hidden;
    float* dg = di + 2 * hidden;
    float* dout = di + 3 * hidden;
    const float* tc = tanh_c + b * hidden;
    const float* gh = grad_h + b * hidden;
    const float* dhb = dh + b * hidden;
    const float* cp = c_prev + b * hidden;
    float* dcb = dc + b * hidden;
    for (int64_t k = 0; k < hidden; ++k) {
      const float d_h = gh[k] + dhb[k];
      const float o = go[k], i = gi[k], f = gf[k], g = gg[k], t = tc[k];
      const float d_c = dcb[k] + d_h * o * (1.0f - t * t);
      dout[k] = d_h * t * o * (1.0f - o);
      di[k] = d_c * g * i * (1.0f - i);
      dg[k] = d_c * i * (1.0f - g * g);
      df[k] = d_c * cp[k] * f * (1.0f - f);
      dcb[k] = d_c * f;
    }
  }
}

template <class F>
void for_rows(int64_t rows, int64_t hidden, const F& f) {
  at::parallel_for(0, rows, std::max<int64_t>(1, kGrainElements / hidden), f);
}

class LstmLayer : public torch::autograd::Function<LstmLayer> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& w_ih,
                        const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
    const MatmulPrecision mp = MatmulPrecision::current(x.device());
    // This function does autocast's job itself (above); keep autocast from
    // also rewriting the ops below.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const int64_t steps = x.size(0), batch = x.size(1), in = x.size(2), hidden = w_hh.size(1);
    const Tensor bias = b_ih + b_hh;
    // The input projection of all steps in one product; each step then adds
    // its recurrent product in place and activates in place.
    const Tensor x2d = x.reshape({steps * batch, in});
    Tensor gates;
    if (mp.lower) {
      gates = mp.result(at::mm(mp.operand(x2d), mp.operand(w_ih).t())).add_(bias);
    } else {
      gates = at::addmm(bias, x2d, w_ih.t());
    }
    gates = gates.view({steps, batch, 4 * hidden});
    const auto floats = x.options().dtype(at::kFloat);
    Tensor y = at::empty({steps, batch, hidden}, floats);
    Tensor c = at::empty({steps, batch, hidden}, floats);
    Tensor tanh_c = at::empty({steps, batch, hidden}, floats);
    const Tensor w_hh_t = mp.operand(w_hh).t();
    for (int64_t t = 0; t < steps; ++t) {
      Tensor g = gates[t];
      if (t > 0) {  // h_{-1} = 0
        if (mp.lower) {
          g.add_(at::mm(mp.operand(y[t - 1]), w_hh_t));
        } else {
          g.addmm_(y[t - 1], w_hh_t);
        }
      }
      g.narrow(/*dim=*/1, /*start=*/0, /*length=*/2 * hidden).sigmoid_();
      g.narrow(/*dim=*/1, /*start=*/2 * hidden, /*length=*/hidden).tanh_();
      g.narrow(/*dim=*/1, /*start=*/3 * hidden, /*length=*/hidden).sigmoid_();
      const float* gp = g.data_ptr<float>();
      const float* c_prev = t > 0 ? c[t - 1].data_ptr<float>() : nullptr;
      float* ct = c[t].data_ptr<float>();
      for_rows(batch, hidden, [&](int64_t begin, int64_t end) {
        cell_state_rows(gp, c_prev, ct, hidden, begin, end);
      });
      Tensor tc = tanh_c[t];
      at::tanh_out(tc, c[t]);
      const float* tcp = tc.data_ptr<float>();
      float* yt = y[t].data_ptr<float>();
      for_rows(batch, hidden,
               [&](int64_t begin, int64_t end) { hidden_rows(gp, tcp, yt, hidden, begin, end); });
    }
    ctx->save_for_backward({x, w_ih, w_hh, gates, y, c, tanh_c});
    ctx->saved_data["lower"] = mp.lower;
    ctx->saved_data["dtype"] = static_cast<int64_t>(mp.dtype);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];
    const Tensor& w_ih = saved[1];
    const Tensor& w_hh = saved[2];
    const Tensor& gates = saved[3];
    const Tensor& y = saved[4];
    const Tensor& c = saved[5];
    const Tensor& tanh_c = saved[6];
    MatmulPrecision mp;
    mp.lower = ctx->saved_data["lower"].toBool();
    mp.dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    const int64_t steps = x.size(0), batch = x.size(1), in = x.size(2), hidden = w_hh.size(1);
    const Tensor grad_y = grad_outputs[0].to(at::kFloat).contiguous();

    const auto floats = x.options().dtype(at::kFloat);
    Tensor dgates = at::empty({steps, batch, 4 * hidden}, floats);
    Tensor dh = at::zeros({batch, hidden}, floats);
    Tensor dc = at::zeros({batch, hidden}, floats);
    const Tensor c_initial = at::zeros({batch, hidden}, floats);
    const Tensor w_hh_op = mp.operand(w_hh);
    for (int64_t t = steps - 1; t >= 0; --t) {
      const float* gp = gates[t].data_ptr<float>();
      const float* tcp = tanh_c[t].data_ptr<float>();
      const float* c_prev = (t > 0 ? c[t - 1] : c_initial).data_ptr<float>();
      const float* ghp = grad_y[t].data_ptr<float>();
      const float* dhp = dh.data_ptr<float>();
      float* dcp = dc.data_ptr<float>();
      Tensor dg = dgates[t];
      float* dgp = dg.data_ptr<float>();
      for_rows(batch, hidden, [&](int64_t begin, int64_t end) {
        backward_rows(gp, tcp, c_prev, ghp, dhp, dcp, dgp, hidden, begin, end);
      });
      if (t > 0) {
        if (mp.lower) {
          dh.copy_(at::mm(mp.operand(dg), w_hh_op));
        } else {
          at::mm_out(dh, dg, w_hh);
        }
      }
    }
    // The weight gradients of all steps in one product each.
    const Tensor flat = dgates.view({steps * batch, 4 * hidden});
    Tensor dx, dw_ih, dw_hh, db;
    if (ctx->needs_input_grad(0)) {
      dx = mp.result(at::mm(mp.operand(flat), mp.operand(w_ih))).view({steps, batch, in});
    }
    if (ctx->needs_input_grad(1)) {
      dw_ih = mp.result(at::mm(mp.operand(flat).t(), mp.operand(x.reshape({steps * batch, in}))));
    }
    if (ctx->needs_input_grad(2)) {
      if (steps > 1) {
        const Tensor later =
            dgates.slice(/*dim=*/0, /*start=*/1).reshape({(steps - 1) * batch, 4 * hidden});
        const Tensor earlier = y.slice(/*dim=*/0, /*start=*/0, /*end=*/steps - 1)
                                   .reshape({(steps - 1) * batch, hidden});
        dw_hh = mp.result(at::mm(mp.operand(later).t(), mp.operand(earlier)));
      } else {
        dw_hh = at::zeros_like(w_hh);
      }
    }
    if (ctx->needs_input_grad(3) || ctx->needs_input_grad(4)) db = flat.sum(/*dim=*/0);
    return {dx, dw_ih, dw_hh, db, db};
  }
};

}  // namespace

torch::Tensor fused_lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih,
                               const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                               const torch::Tensor& b_hh) {
  TORCH_CHECK(x.device().is_cpu(), "the fused LSTM runs on the CPU only");
  TORCH_CHECK(x.dim() == 3 && x.scalar_type() == at::kFloat && x.is_contiguous(),
              "the fused LSTM takes a contiguous float32 [T, B, I] input");
  TORCH_CHECK(w_ih.scalar_type() == at::kFloat && w_hh.scalar_type() == at::kFloat,
              "the fused LSTM keeps float32 weights");
  return LstmLayer::apply(x, w_ih, w_hh, b_ih, b_hh);
}

}  // namespace gpusweep::timeseries
