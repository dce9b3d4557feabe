// COMA's actor and critic; see networks.hpp.
#include "networks.hpp"

namespace gpusweep::marl {

ActorImpl::ActorImpl(int64_t obs_dim, int64_t hidden, int64_t actions)
    : fc1_(register_module("fc1", torch::nn::Linear(obs_dim, hidden))),
      fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
      fc3_(register_module("fc3", torch::nn::Linear(hidden, actions))) {}

torch::Tensor ActorImpl::forward(const torch::Tensor& obs) {
  return fc3_(torch::relu(fc2_(torch::relu(fc1_(obs)))));
}

CriticImpl::CriticImpl(int64_t state_dim, int64_t agents, int64_t hidden, int64_t actions,
                       int64_t patch_dim)
    : state_dim_(state_dim),
      agents_(agents),
      actions_(actions),
      patch_dim_(patch_dim),
      fc1_(register_module(
          "fc1", torch::nn::Linear(state_dim + agents * actions + agents + patch_dim, hidden))),
      fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
      fc3_(register_module("fc3", torch::nn::Linear(hidden, actions))) {
  torch::Tensor mask = torch::ones({agents, agents, actions});
  for (int64_t a = 0; a < agents; ++a) mask[a][a].zero_();
  others_mask_ = register_buffer("others_mask", mask.view({agents, agents * actions}));
  ids_ = register_buffer("ids", torch::eye(agents));
}

torch::Tensor CriticImpl::agent_part(const torch::Tensor& joint_actions,
                                     const torch::Tensor& patches) const {
  const int64_t n = joint_actions.size(0);
  const torch::Tensor all = torch::one_hot(joint_actions, actions_)
                                .view({n, 1, agents_ * actions_})
                                .to(others_mask_.scalar_type());
  if (patch_dim_ == 0) {
    return torch::cat({all * others_mask_, ids_.expand({n, agents_, agents_})}, /*dim=*/2);
  }
  return torch::cat({all * others_mask_, ids_.expand({n, agents_, agents_}), patches}, /*dim=*/2);
}

torch::Tensor CriticImpl::forward(const torch::Tensor& state, const torch::Tensor& agent_part) {
  const torch::Tensor& weight = fc1_->weight;
  const torch::Tensor shared =
      torch::addmm(fc1_->bias, state, weight.narrow(/*dim=*/1, /*start=*/0, state_dim_).t());
  // In place: matmul's backward needs its inputs, not its output.
  torch::Tensor h =
      torch::matmul(agent_part, weight.narrow(1, state_dim_, weight.size(1) - state_dim_).t());
  h.add_(shared.unsqueeze(1)).relu_();
  return fc3_(fc2_(h).relu_());
}

}  // namespace gpusweep::marl
