#include <gpusweep/torchkit/fused_adam.hpp>

#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>

#include <stdexcept>
#include <vector>

namespace gpusweep::torchkit {
namespace {

// One group's tensors as the fused kernels take them, its state created as
// torch::optim::Adam creates it (zeros in the parameter's layout, step 0)
// and its step counted before the kernel reads it.
struct GroupLists {
  std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
};

template <typename State>
GroupLists collect(
    torch::optim::OptimizerParamGroup& group, bool amsgrad,
    ska::flat_hash_map<void*, std::unique_ptr<torch::optim::OptimizerParamState>>& states) {
  GroupLists l;
  for (auto& p : group.params()) {
    if (!p.grad().defined()) continue;
    if (p.grad().is_sparse()) {
      throw std::invalid_argument("FusedAdam does not support sparse gradients");
    }
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
    state.step(state.step() + 1);
    l.params.push_back(p);
    l.grads.push_back(p.grad());
    l.exp_avgs.push_back(state.exp_avg());
    l.exp_avg_sqs.push_back(state.exp_avg_sq());
    if (amsgrad) l.max_exp_avg_sqs.push_back(state.max_exp_avg_sq());
    // The kernels read the step from a float tensor (they never write it).
    l.steps.push_back(torch::scalar_tensor(static_cast<double>(state.step()),
                                           torch::TensorOptions().dtype(torch::kFloat)));
  }
  return l;
}

void refuse_closure(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure) throw std::invalid_argument("FusedAdam/FusedAdamW take no LossClosure");
}

}  // namespace

torch::Tensor FusedAdam::step(LossClosure closure) {
  refuse_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamOptions&>(group.options());
    GroupLists l = collect<torch::optim::AdamParamState>(group, o.amsgrad(), state_);
    if (l.params.empty()) continue;
    at::_fused_adam_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                     o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                     o.eps(), o.amsgrad(), /*maximize=*/false);
  }
  return {};
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  refuse_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
    GroupLists l = collect<torch::optim::AdamWParamState>(group, o.amsgrad(), state_);
    if (l.params.empty()) continue;
    at::_fused_adamw_(l.params, l.grads, l.exp_avgs, l.exp_avg_sqs, l.max_exp_avg_sqs, l.steps,
                      o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.weight_decay(),
                      o.eps(), o.amsgrad(), /*maximize=*/false);
  }
  return {};
}

}  // namespace gpusweep::torchkit
