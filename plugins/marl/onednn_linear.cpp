// oneDNN-sgemm Linear layers; see onednn_linear.hpp.
#include "onednn_linear.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>

namespace gpusweep::marl::onednn {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// oneDNN's C API (dnnl.h, stable since oneDNN 1.0): row-major
// C = alpha op(A) op(B) + beta C, op(A) [M, K], op(B) [K, N], C [M, N].
// dnnl_dim_t is int64_t, dnnl_status_t an enum with dnnl_success = 0.
using SgemmFn = int (*)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc);

// The oneDNN LibTorch itself uses: the process-wide symbol if LibTorch was
// loaded globally, else the already loaded libdnnl.so.2 (RTLD_NOLOAD: never
// load a second copy, which could be another version).
SgemmFn resolve() {
  if (void* sym = dlsym(RTLD_DEFAULT, "dnnl_sgemm")) return reinterpret_cast<SgemmFn>(sym);
  if (void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    if (void* sym = dlsym(lib, "dnnl_sgemm")) return reinterpret_cast<SgemmFn>(sym);
  }
  return nullptr;
}

SgemmFn sgemm() {
  static const SgemmFn fn = resolve();
  return fn;
}

// A 2-D tensor as a BLAS operand: row-major as is ('N') or as the transpose
// of a row-major matrix ('T'), copied only if it is neither.
struct Operand {
  char trans;
  int64_t ld;
  const float* data;
  Tensor keep;  // the contiguous copy, when one was made
};

Operand operand(const Tensor& t) {
  const int64_t rows = t.size(0);
  const int64_t cols = t.size(1);
  if (t.stride(1) == 1 && (rows <= 1 || t.stride(0) >= cols)) {
    return {'N', std::max<int64_t>({t.stride(0), cols, 1}), t.data_ptr<float>(), {}};
  }
  if (t.stride(0) == 1 && (cols <= 1 || t.stride(1) >= rows)) {
    return {'T', std::max<int64_t>({t.stride(1), rows, 1}), t.data_ptr<float>(), {}};
  }
  Tensor c = t.contiguous();
  return {'N', std::max<int64_t>(cols, 1), c.data_ptr<float>(), c};
}

// c = a b + beta c, for a [M, K], b [K, N] (any strides) and c [M, N] with
// rows of unit stride (fresh tensors or column slices of one).
void gemm(const Tensor& c, const Tensor& a, const Tensor& b, float beta) {
  const int64_t m = a.size(0);
  const int64_t k = a.size(1);
  const int64_t n = b.size(1);
  TORCH_CHECK(b.size(0) == k && c.size(0) == m && c.size(1) == n, "onednn gemm: shapes ",
              a.sizes(), " x ", b.sizes(), " -> ", c.sizes());
  TORCH_CHECK(c.stride(1) == 1 && (m <= 1 || c.stride(0) >= n), "onednn gemm: output strides");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == 0.0f) {
      c.zero_();
    } else {
      c.mul_(beta);
    }
    return;
  }
  const Operand oa = operand(a);
  const Operand ob = operand(b);
  const int status = sgemm()(oa.trans, ob.trans, m, n, k, 1.0f, oa.data, oa.ld, ob.data, ob.ld,
                             beta, c.data_ptr<float>(), std::max<int64_t>(c.stride(0), n));
  TORCH_CHECK(status == 0, "dnnl_sgemm failed with status ", status);
}

// x [M, in] -> relu?(x W^T + b) [M, out], like ATen's addmm: the bias is
// copied into the output and the GEMM accumulates onto it.
Tensor linear_2d(const Tensor& x, const Tensor& weight, const Tensor& bias, bool relu) {
  Tensor out = torch::empty({x.size(0), weight.size(0)}, x.options());
  float beta = 0.0f;
  if (bias.defined()) {
    out.copy_(bias.expand_as(out));
    beta = 1.0f;
  }
  gemm(out, x, weight.t(), beta);
  if (relu) out.relu_();
  return out;
}

struct LinearFn : torch::autograd::Function<LinearFn> {
  // x [M, in]
  static Tensor forward(AutogradContext* ctx, const Tensor& x, const Tensor& weight,
                        const Tensor& bias, bool relu) {
    Tensor out = linear_2d(x, weight, bias, relu);
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["has_bias"] = bias.defined();
    ctx->save_for_backward({x, weight, relu ? out : Tensor()});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor& x = saved[0];
    const Tensor& weight = saved[1];
    Tensor g = grads[0];
    if (ctx->saved_data["relu"].toBool()) g = at::threshold_backward(g, saved[2], 0);
    Tensor dx;
    Tensor dw;
    Tensor db;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty_like(x, at::MemoryFormat::Contiguous);
      gemm(dx, g, weight, 0.0f);
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty_like(weight, at::MemoryFormat::Contiguous);
      gemm(dw, g.t(), x, 0.0f);
    }
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) db = g.sum(0);
    return {dx, dw, db, Tensor()};
  }
};

struct SplitInputFn : torch::autograd::Function<SplitInputFn> {
  static Tensor run(const Tensor& state, const Tensor& agent_part, const Tensor& weight,
                    const Tensor& bias) {
    const int64_t n = state.size(0);
    const int64_t state_dim = state.size(1);
    const int64_t agents = agent_part.size(1);
    const int64_t hidden = weight.size(0);
    Tensor shared = linear_2d(state, weight.narrow(1, 0, state_dim), bias, /*relu=*/false);
    Tensor out = torch::empty({n * agents, hidden}, state.options());
    gemm(out, agent_part.reshape({n * agents, -1}),
         weight.narrow(1, state_dim, weight.size(1) - state_dim).t(), 0.0f);
    out = out.view({n, agents, hidden});
    out.add_(shared.unsqueeze(1)).relu_();
    return out;
  }

  static Tensor forward(AutogradContext* ctx, const Tensor& state, const Tensor& agent_part,
                        const Tensor& weight, const Tensor& bias) {
    Tensor out = run(state, agent_part, weight, bias);
    ctx->save_for_backward({state, agent_part, weight, out});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor& state = saved[0];
    const Tensor& agent_part = saved[1];
    const Tensor& weight = saved[2];
    const int64_t n = state.size(0);
    const int64_t state_dim = state.size(1);
    const int64_t agents = agent_part.size(1);
    const int64_t rest = weight.size(1) - state_dim;
    const int64_t hidden = weight.size(0);
    // [N, A, H] gradient of the pre-activation, and its sum over agents: the
    // gradient of the shared (state) part.
    const Tensor gz = at::threshold_backward(grads[0], saved[3], 0);
    const Tensor gz2 = gz.reshape({n * agents, hidden});
    const Tensor g_shared = gz.sum(1);
    Tensor d_state;
    Tensor d_agent;
    Tensor dw;
    Tensor db;
    if (ctx->needs_input_grad(0)) {
      d_state = torch::empty_like(state, at::MemoryFormat::Contiguous);
      gemm(d_state, g_shared, weight.narrow(1, 0, state_dim), 0.0f);
    }
    if (ctx->needs_input_grad(1)) {
      d_agent = torch::empty({n * agents, rest}, agent_part.options());
      gemm(d_agent, gz2, weight.narrow(1, state_dim, rest), 0.0f);
      d_agent = d_agent.view(agent_part.sizes());
    }
    if (ctx->needs_input_grad(2)) {
      dw = torch::empty_like(weight, at::MemoryFormat::Contiguous);
      gemm(dw.narrow(1, 0, state_dim), g_shared.t(), state, 0.0f);
      gemm(dw.narrow(1, state_dim, rest), gz2.t(), agent_part.reshape({n * agents, rest}), 0.0f);
    }
    if (ctx->needs_input_grad(3)) db = g_shared.sum(0);
    return {d_state, d_agent, dw, db};
  }
};

bool any_requires_grad(std::initializer_list<const Tensor*> ts) {
  if (!torch::GradMode::is_enabled()) return false;
  for (const Tensor* t : ts) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

}  // namespace

bool available() { return sgemm() != nullptr; }

bool usable(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat &&
         t.layout() == torch::kStrided;
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias, bool relu) {
  TORCH_CHECK(available() && usable(x) && usable(weight) && (!bias.defined() || usable(bias)),
              "onednn::linear needs oneDNN and CPU float32 tensors");
  std::vector<int64_t> out_sizes = x.sizes().vec();
  out_sizes.back() = weight.size(0);
  const Tensor x2 = x.reshape({-1, x.size(-1)});
  Tensor out = any_requires_grad({&x, &weight, &bias})
                   ? LinearFn::apply(x2, weight, bias, relu)
                   : linear_2d(x2, weight, bias, relu);
  return out.view(out_sizes);
}

torch::Tensor split_input_linear_relu(const torch::Tensor& state, const torch::Tensor& agent_part,
                                      const torch::Tensor& weight, const torch::Tensor& bias) {
  TORCH_CHECK(available() && usable(state) && usable(agent_part) && usable(weight) &&
                  usable(bias),
              "onednn::split_input_linear_relu needs oneDNN and CPU float32 tensors");
  TORCH_CHECK(state.dim() == 2 && agent_part.dim() == 3 && agent_part.size(0) == state.size(0) &&
                  weight.size(1) == state.size(1) + agent_part.size(2),
              "split_input_linear_relu: shapes");
  if (any_requires_grad({&state, &agent_part, &weight, &bias})) {
    return SplitInputFn::apply(state, agent_part, weight, bias);
  }
  return SplitInputFn::run(state, agent_part, weight, bias);
}

}  // namespace gpusweep::marl::onednn
