// CartPole-v1 (gym's dynamics, Euler integration) for num_envs copies at once,
// stepped as tensor ops on the training device.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace gpusweep::dqn {

// What one step of every env produced.
struct CartPoleStep {
  torch::Tensor next_obs;    // [N, 4] float: where the action led, before any reset
  torch::Tensor reward;      // [N] float: 1 per step, the final one included
  torch::Tensor terminated;  // [N] bool: the pole fell or the cart left the track
  torch::Tensor truncated;   // [N] bool: the episode reached kMaxEpisodeSteps
};

class CartPole {
 public:
  static constexpr int64_t kObsDim = 4;      // x, x_dot, theta, theta_dot
  static constexpr int64_t kNumActions = 2;  // push left, push right
  static constexpr int64_t kMaxEpisodeSteps = 500;

  // All envs start from gym's reset: each state variable uniform(-0.05, 0.05)
  // drawn from a generator seeded with `seed` (and used for nothing else).
  CartPole(int64_t num_envs, const torch::Device& device, uint64_t seed);

  // The current observation of every env, [N, 4]. Step replaces the tensor
  // rather than writing into it, so a caller may hold it across a step.
  const torch::Tensor& obs() const { return state_; }

  // Applies actions ([N] int64 on the device, 0 or 1) and auto-resets every
  // env whose episode ended, so obs() afterwards is the next episode's start.
  CartPoleStep step(const torch::Tensor& actions);

  int64_t num_envs() const { return num_envs_; }

 private:
  int64_t num_envs_;
  torch::Generator gen_;
  torch::Tensor state_;       // [N, 4] float
  torch::Tensor elapsed_;     // [N] int64: steps in the current episode
  torch::Tensor limits_;      // [4] float: |state| beyond which an episode terminates
  torch::Tensor reward_;      // [N] float ones, shared by every step
  torch::Tensor reset_draw_;  // [N, 4] float scratch for reset states
};

}  // namespace gpusweep::dqn
