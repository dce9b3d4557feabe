// COMA's two networks: the actor shared by all agents and the centralised
// critic that values each of an agent's actions given everybody else's.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace gpusweep::marl {

// Local observation -> hidden -> hidden -> action logits, ReLU.
class ActorImpl : public torch::nn::Module {
 public:
  ActorImpl(int64_t obs_dim, int64_t hidden, int64_t actions);
  torch::Tensor forward(const torch::Tensor& obs);

 private:
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  torch::nn::Linear fc3_{nullptr};
};
TORCH_MODULE(Actor);

// An MLP on [state, other agents' actions (one-hot), agent one-hot, and
// optionally the agent's own local patch] -> hidden -> hidden -> Q of each of
// the agent's actions. The state (coverage map and
// positions) is the same for all agents of a transition, so the first layer
// is applied to it once per transition and to the small per-agent part once
// per agent, then summed: the same function as one Linear over the
// concatenation (it is one Linear's weight, split by columns), at about a
// quarter of that layer's cost.
class CriticImpl : public torch::nn::Module {
 public:
  // patch_dim: width of the optional per-agent observation part (0 = none).
  CriticImpl(int64_t state_dim, int64_t agents, int64_t hidden, int64_t actions, int64_t patch_dim);

  // state [N, state_dim] and agent_part(joint actions) [N, A, ...] ->
  // Q [N, A, actions].
  torch::Tensor forward(const torch::Tensor& state, const torch::Tensor& agent_part);

  // The per-agent part of the input for joint actions [N, A] int64:
  // [N, A, A * actions + A (+ patch_dim)] float, each agent's row holding the
  // others' actions one-hot (its own block zero), its own one-hot id and,
  // with patch_dim > 0, `patches` [N, A, patch_dim].
  torch::Tensor agent_part(const torch::Tensor& joint_actions, const torch::Tensor& patches) const;

 private:
  int64_t state_dim_;
  int64_t agents_;
  int64_t actions_;
  int64_t patch_dim_;
  torch::nn::Linear fc1_{nullptr};
  torch::nn::Linear fc2_{nullptr};
  torch::nn::Linear fc3_{nullptr};
  torch::Tensor others_mask_;  // buffer [A, A * actions]: 0 on the agent's own block
  torch::Tensor ids_;          // buffer [A, A] identity
};
TORCH_MODULE(Critic);

}  // namespace gpusweep::marl
