#include <gpusweep/torchkit/fused_adam.hpp>

#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace gpusweep::torchkit {
namespace {

using StateMap = ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>;

// The fused kernels walk a parameter, its gradient and its moments by one
// linear index: each must be dense and laid out as the parameter (same
// sizes, strides, device and dtype).
bool laid_out_as(const torch::Tensor& t, const torch::Tensor& p) {
  return t.defined() && t.sizes() == p.sizes() && t.strides() == p.strides() &&
         t.device() == p.device() && t.scalar_type() == p.scalar_type();
}

// Whether every parameter with a gradient can take the fused step: a dense
// gradient and moments (where they exist yet) in the parameter's layout.
// Otherwise (a sparse gradient, a checkpoint's moments in another layout)
// LibTorch's own step, which handles any layout, runs instead.
template <typename State>
bool fusable(std::vector<torch::optim::OptimizerParamGroup>& groups, const StateMap& states,
             bool (*amsgrad)(const torch::optim::OptimizerParamGroup&)) {
  for (auto& group : groups) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (p.grad().is_sparse() || !p.is_non_overlapping_and_dense() || !laid_out_as(p.grad(), p)) {
        return false;
      }
      const auto it = states.find(p.unsafeGetTensorImpl());
      if (it == states.end()) continue;
      const auto& s = static_cast<const State&>(*it->second);
      if (!laid_out_as(s.exp_avg(), p) || !laid_out_as(s.exp_avg_sq(), p)) return false;
      if (amsgrad(group) && !laid_out_as(s.max_exp_avg_sq(), p)) return false;
    }
  }
  return true;
}

// One call's tensors: the kernels take one device and one dtype at a time.
// The step tensors are on that device, one per step value (all parameters
// of a group usually share one), shared by the parameters that have it.
struct Split {
  Split(c10::Device d, c10::ScalarType t) : device(d), dtype(t) {}
  c10::Device device;
  c10::ScalarType dtype;
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
  std::vector<torch::optim::OptimizerParamState*> states;
  std::vector<std::pair<int64_t, torch::Tensor>> step_values;

  const torch::Tensor& step_tensor(int64_t value) {
    for (const auto& [v, t] : step_values) {
      if (v == value) return t;
    }
    step_values.emplace_back(
        value, torch::scalar_tensor(static_cast<double>(value),
                                    torch::TensorOptions().dtype(torch::kFloat).device(device)));
    return step_values.back().second;
  }
};

// Steps one group: its state created as torch::optim::Adam creates it
// (zeros in the parameter's layout, step 0), its parameters split by device
// and dtype (a split or two: found by a linear search), each split in one
// kernel call. A parameter's step is counted once its call returned; the
// kernels read it and never write it.
template <typename State, typename Call>
void step_group(torch::optim::OptimizerParamGroup& group, bool amsgrad, StateMap& states,
                DeviceSteps& device_steps, const Call& call) {
  std::vector<Split> splits;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    auto it = states.find(p.unsafeGetTensorImpl());
    if (it == states.end()) {
      auto fresh = std::make_unique<State>();
      fresh->step(0);
      fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      if (amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
      it = states.emplace(p.unsafeGetTensorImpl(), std::move(fresh)).first;
    }
    auto& state = static_cast<State&>(*it->second);
    auto split = std::find_if(splits.begin(), splits.end(), [&p](const Split& s) {
      return s.device == p.device() && s.dtype == p.scalar_type();
    });
    if (split == splits.end()) {
      splits.emplace_back(p.device(), p.scalar_type());
      split = std::prev(splits.end());
    }
    split->params.push_back(p);
    split->grads.push_back(p.grad());
    split->exp_avgs.push_back(state.exp_avg());
    split->exp_avg_sqs.push_back(state.exp_avg_sq());
    if (amsgrad) split->max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
    if (device_steps.on) {
      torch::Tensor& count = device_steps.by_param[p.unsafeGetTensorImpl()];
      if (!count.defined()) {
        count = torch::full({}, static_cast<double>(state.step()),
                            torch::TensorOptions().dtype(torch::kFloat).device(p.device()));
      }
      split->steps.push_back(count);
    } else {
      split->steps.push_back(split->step_tensor(state.step() + 1));
    }
    split->states.push_back(&state);
  }
  for (auto& split : splits) {
    if (device_steps.on) torch::_foreach_add_(split.steps, 1);
    call(split);
    // A step the scaler's found_inf skipped takes its counts back, as
    // torch.optim's fused Adam does.
    if (device_steps.found_inf.defined()) {
      torch::_foreach_add_(split.steps, device_steps.found_inf.squeeze(), /*alpha=*/-1);
    }
    for (auto* s : split.states) {
      auto& state = static_cast<State&>(*s);
      state.step(state.step() + 1);
    }
  }
}

// The fused step for optimiser options Options (AdamOptions or
// AdamWOptions): false, with nothing changed, where the kernels cannot run.
template <typename State, typename Options, typename Kernel>
bool fused_step(std::vector<torch::optim::OptimizerParamGroup>& groups, StateMap& states,
                DeviceSteps& device_steps, const torch::optim::Optimizer::LossClosure& closure,
                const Kernel& kernel) {
  if (closure) throw std::invalid_argument("FusedAdam/FusedAdamW take no LossClosure");
  torch::NoGradGuard no_grad;
  auto amsgrad = [](const torch::optim::OptimizerParamGroup& g) {
    return static_cast<const Options&>(g.options()).amsgrad();
  };
  if (!fusable<State>(groups, states, amsgrad)) {
    if (device_steps.on) {
      throw std::runtime_error(
          "a capturable FusedAdam cannot take this step in its fused kernels (a sparse gradient, "
          "or a gradient or moments not laid out as their parameter), and LibTorch's own step "
          "counts steps on the host");
    }
    return false;
  }
  for (auto& group : groups) {
    const auto& o = static_cast<const Options&>(group.options());
    step_group<State>(group, o.amsgrad(), states, device_steps, [&](Split& l) { kernel(l, o); });
  }
  return true;
}

template <typename State>
void sync_host_steps_of(const DeviceSteps& steps, StateMap& states) {
  for (const auto& [param, count] : steps.by_param) {
    const auto it = states.find(param);
    if (it != states.end()) {
      static_cast<State&>(*it->second).step(count.item().toLong());
    }
  }
}

// The kernels' found_inf argument: none unless skip_when() gave one.
std::optional<torch::Tensor> found_inf_of(const DeviceSteps& steps) {
  if (!steps.found_inf.defined()) return std::nullopt;
  return steps.found_inf;
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  using torch::optim::AdamOptions;
  const bool fused = fused_step<torch::optim::AdamParamState, AdamOptions>(
      param_groups_, state_, steps_, closure, [this](Split& l, const AdamOptions& o) {
        at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                         o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                         o.eps(), o.amsgrad(), /*maximize=*/false, /*grad_scale=*/std::nullopt,
                         found_inf_of(steps_));
      });
  return fused ? torch::Tensor() : torch::optim::Adam::step();
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  using torch::optim::AdamWOptions;
  const bool fused = fused_step<torch::optim::AdamWParamState, AdamWOptions>(
      param_groups_, state_, steps_, closure, [this](Split& l, const AdamWOptions& o) {
        at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                          o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                          o.eps(), o.amsgrad(), /*maximize=*/false, /*grad_scale=*/std::nullopt,
                          found_inf_of(steps_));
      });
  return fused ? torch::Tensor() : torch::optim::AdamW::step();
}

void CapturableSteps::skip_when(const torch::Tensor& found_inf) {
  if (!steps_.on) {
    throw std::logic_error("skip_when needs a capturable optimiser (capturable(true) first)");
  }
  steps_.found_inf = found_inf;
}

std::unique_ptr<torch::optim::Adam> adam_for_graphs(const std::vector<torch::Tensor>& params,
                                                    const torch::optim::AdamOptions& options,
                                                    bool cuda_graphs) {
  if (!cuda_graphs) return std::make_unique<torch::optim::Adam>(params, options);
  auto fused = std::make_unique<FusedAdam>(params, options);
  fused->capturable(true);
  return fused;
}

torch::Tensor CapturableSteps::device_step(const torch::Tensor& param) const {
  const auto it = steps_.by_param.find(param.unsafeGetTensorImpl());
  return it == steps_.by_param.end() ? torch::Tensor() : it->second;
}

void FusedAdam::sync_host_steps() {
  sync_host_steps_of<torch::optim::AdamParamState>(steps_, state_);
}

void FusedAdamW::sync_host_steps() {
  sync_host_steps_of<torch::optim::AdamWParamState>(steps_, state_);
}

}  // namespace gpusweep::torchkit
