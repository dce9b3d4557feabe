// CartPole-v1 as tensor ops; see cartpole.hpp. Constants and update order
// follow gym's classic_control/cartpole.py so returns are comparable.
#include "cartpole.hpp"

#include <cmath>
#include <gpusweep/torchkit/seeding.hpp>
#include <limits>

namespace gpusweep::dqn {

using torchkit::derive_seed;
using torchkit::make_generator;
namespace {

constexpr double kGravity = 9.8;
constexpr double kMassCart = 1.0;
constexpr double kMassPole = 0.1;
constexpr double kTotalMass = kMassCart + kMassPole;
constexpr double kLength = 0.5;  // half the pole's length, as gym
constexpr double kPoleMassLength = kMassPole * kLength;
constexpr double kForceMag = 10.0;
constexpr double kTau = 0.02;  // seconds per step
constexpr double kXThreshold = 2.4;
constexpr double kThetaThreshold = 12 * 2 * M_PI / 360;  // 12 degrees, as gym
constexpr double kResetBound = 0.05;

}  // namespace

CartPole::CartPole(int64_t num_envs, const torch::Device& device, uint64_t seed)
    : num_envs_(num_envs), gen_(make_generator(device, seed)) {
  const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const float inf = std::numeric_limits<float>::infinity();
  // Velocities are unbounded: infinity keeps them out of the termination test.
  limits_ = torch::tensor(
                {static_cast<float>(kXThreshold), inf, static_cast<float>(kThetaThreshold), inf})
                .to(device);
  reward_ = torch::ones({num_envs}, floats);
  reset_draw_ = torch::empty({num_envs, kObsDim}, floats);
  state_ = torch::empty({num_envs, kObsDim}, floats).uniform_(-kResetBound, kResetBound, gen_);
  elapsed_ = torch::zeros({num_envs}, floats.dtype(torch::kLong));
}

CartPoleStep CartPole::step(const torch::Tensor& actions) {
  const auto columns = state_.unbind(/*dim=*/1);
  const torch::Tensor& x_dot = columns[1];
  const torch::Tensor& theta = columns[2];
  const torch::Tensor& theta_dot = columns[3];

  // Written with in-place ops on fresh temporaries: at one env the step is
  // bound by per-op overhead, not arithmetic.
  torch::Tensor force = actions.to(torch::kFloat).mul_(2 * kForceMag).sub_(kForceMag);
  torch::Tensor cos_theta = theta.cos();
  torch::Tensor sin_theta = theta.sin();
  torch::Tensor temp =
      theta_dot.square().mul_(sin_theta).mul_(kPoleMassLength).add_(force).div_(kTotalMass);
  torch::Tensor denom =
      cos_theta.square().mul_(-kMassPole / kTotalMass).add_(4.0 / 3.0).mul_(kLength);
  torch::Tensor theta_acc = sin_theta.mul_(kGravity).sub_(cos_theta * temp).div_(denom);
  torch::Tensor x_acc = temp.sub_(cos_theta.mul_(theta_acc), kPoleMassLength / kTotalMass);

  // Euler: every variable advances by tau times its derivative at the old state.
  torch::Tensor next =
      torch::stack({x_dot, x_acc, theta_dot, theta_acc}, /*dim=*/1).mul_(kTau).add_(state_);

  torch::Tensor terminated = next.abs().gt(limits_).any(/*dim=*/1);
  elapsed_.add_(1);
  torch::Tensor truncated = elapsed_.ge(kMaxEpisodeSteps);
  torch::Tensor done = terminated.logical_or(truncated);
  elapsed_.masked_fill_(done, 0);
  // Drawn every step, finished or not, so the stream does not depend on when
  // episodes end and no host sync is needed to decide.
  reset_draw_.uniform_(-kResetBound, kResetBound, gen_);
  state_ = torch::where(done.unsqueeze(1), reset_draw_, next);
  return {std::move(next), reward_, std::move(terminated), std::move(truncated)};
}

}  // namespace gpusweep::dqn
