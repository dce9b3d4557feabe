// dqn: DQN on vectorised CartPole-v1 (docs/workloads.md "dqn"). One step is one env
// step per env plus one gradient update; the knobs are the seed guide's claims
// (device-resident replay buffer, in-place target sync).
#include "cartpole.hpp"
#include "replay.hpp"

#include <gpusweep/random.hpp>
#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/estimate.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/seeding.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>
#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpusweep::dqn {

using torchkit::derive_seed;
using torchkit::make_generator;
namespace {

// Canonical hyperparameters (docs/workloads.md); not knobs, so that every trial
// trains the same algorithm.
constexpr double kLearningRate = 1e-3;
constexpr double kGamma = 0.99;
constexpr double kHuberDelta = 1.0;
constexpr int64_t kReplayCapacity = 50000;
constexpr int64_t kLearningStarts = 1000;  // transitions collected at setup
constexpr double kEpsilonStart = 1.0;
constexpr double kEpsilonEnd = 0.05;
constexpr double kEpsilonDecayEnvSteps = 10000;
constexpr int64_t kTargetSyncEvery = 100;  // updates
constexpr int64_t kEvalEpisodes = 10;
constexpr int64_t kMaxNumEnvs = 4096;
constexpr int64_t kMaxHidden = 16384;
// Evaluation always starts from the same states, whatever the trial's seed,
// so that returns of different trials are comparable.
constexpr uint64_t kEvalSeed = 20240611;
// Evaluation checks for "all episodes over" this often (a host sync).
constexpr int64_t kEvalDoneCheckEvery = 25;

// Streams derived from the trial's seed; see torchkit/seeding.hpp.
enum Stream : uint64_t { kEnvStream = 1, kActionStream = 2, kSampleStream = 3, kHostStream = 4 };

// The 4 -> hidden -> hidden -> 2 Q-network. A plain module rather than
// nn::Sequential: its forward skips AnyModule's type-erased dispatch.
class QNetImpl : public torch::nn::Module {
 public:
  QNetImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1_(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        fc3_(register_module("fc3", torch::nn::Linear(hidden, out))) {}

  torch::Tensor forward(const torch::Tensor& x) {
    return fc3_(torch::relu(fc2_(torch::relu(fc1_(x)))));
  }

 private:
  torch::nn::Linear fc1_;
  torch::nn::Linear fc2_;
  torch::nn::Linear fc3_;
};
TORCH_MODULE(QNet);

// This workload's own knobs. The SDK has checked each against the manifest
// (type, choices, range) and filled the defaults before the constructor runs.
struct Knobs {
  bool replay_on_device = false;
  bool roundtrip_sync = true;
  bool double_dqn = false;
  int64_t num_envs = 1;
  int64_t hidden = 128;

  static Knobs parse(const TrialConfig& config) {
    Knobs k;
    k.replay_on_device = config.get<bool>("replay_on_device");
    k.roundtrip_sync = config.get<std::string>("target_sync") == "roundtrip";
    k.double_dqn = config.get<bool>("double_dqn");
    k.num_envs = config.get<int64_t>("num_envs");
    k.hidden = config.get<int64_t>("hidden");
    return k;
  }
};

class Dqn final : public torchkit::TorchWorkload {
 public:
  // What the common settings can act on: an MLP on 2-D batches sampled from
  // the replay buffer, one gradient update per env step.
  static torchkit::Support support() {
    torchkit::Support s;
    s.reason =
        "DQN's batches are sampled from its replay buffer (no input pipeline, no 4-D "
        "tensors), its MLP runs no cuDNN op, and each step is exactly one update";
    // The update (Q forward, target, loss, backward, Adam) is captured; the
    // replay sampling, the env step and the target sync stay outside.
    s.cuda_graphs = true;
    return s;
  }

  static Manifest manifest() {
    Manifest m;
    m.name = "dqn";
    m.version = "1.1.0";
    m.description =
        "DQN on CartPole-v1 (num_envs copies stepped as tensors on the device): MLP "
        "4-hidden-hidden-2, Adam 1e-3, gamma 0.99, Huber loss, replay 50000, epsilon 1 to "
        "0.05 over 10000 env steps, target sync every 100 updates. A step is one env step "
        "per env plus one gradient update.";
    m.unit = "updates";
    m.secondary_unit = "env_steps";
    m.quality = {"mean_return", "random_policy_return", true,
                 "mean return of 10 greedy CartPole-v1 episodes (at most 500 steps each, fixed "
                 "evaluation seed), next to a uniformly random policy's mean return over the "
                 "same 10 starts"};
    m.params = torchkit::common_params(/*default_batch_size=*/64, support());
    m.params.push_back(Param::boolean(
        "replay_on_device", false,
        "true: the replay buffer is preallocated device tensors, written with slice copies "
        "and sampled with one randint and an index_select per field, and actions never leave "
        "the device; false: a host ring buffer, each env step's transitions read back to the "
        "host and each batch assembled sample by sample there and copied to the device"));
    m.params.push_back(Param::choice(
        "target_sync", "roundtrip", {"inplace", "roundtrip"},
        "how the target network is refreshed every 100 updates: inplace = no-grad parameter "
        "copy on the device; roundtrip = serialise the online network through host memory "
        "and load it into the target (the analogue of Keras get_weights/set_weights)"));
    m.params.push_back(Param::boolean(
        "double_dqn", false,
        "Double DQN target: the online network picks the next action, the target network "
        "values it (reduces overestimation; one more forward per update)"));
    m.params.push_back(Param::integer(
        "num_envs", 1, 1, static_cast<double>(kMaxNumEnvs),
        "CartPole copies stepped together as one batch of tensors; a step adds num_envs "
        "transitions but still does one gradient update"));
    m.params.push_back(Param::integer(
        "hidden", 128, 1, static_cast<double>(kMaxHidden),
        "width of both hidden layers of the Q-network (4 -> hidden -> hidden -> 2)"));
    return m;
  }

  explicit Dqn(const TrialConfig& config)
      : TorchWorkload(config, support()),
        knobs_(Knobs::parse(config)),
        env_(knobs_.num_envs, settings_.device, derive_seed(settings_.seed, kEnvStream)),
        action_gen_(make_generator(settings_.device, derive_seed(settings_.seed, kActionStream))),
        sample_gen_(make_generator(settings_.device, derive_seed(settings_.seed, kSampleStream))),
        host_rng_(derive_seed(settings_.seed, kHostStream)) {
    const torch::Device device = settings_.device;
    // Both nets draw their initial weights from the global generator, which
    // Settings::apply has just seeded; the target is then overwritten anyway.
    online_ = QNet(CartPole::kObsDim, knobs_.hidden, CartPole::kNumActions);
    target_ = QNet(CartPole::kObsDim, knobs_.hidden, CartPole::kNumActions);
    online_->to(device);
    target_->to(device);
    online_params_ = online_->parameters();
    target_params_ = target_->parameters();
    for (auto& p : target_params_) p.requires_grad_(false);
    // A captured update needs Adam's step count on the device.
    optimizer_ = torchkit::adam_for_graphs(online_params_, torch::optim::AdamOptions(kLearningRate),
                                           settings_.cuda_graphs);
    // fp16 gets torchkit's gradient scaler, as every workload's does.
    grad_.emplace(settings_, *optimizer_);
    sync_timer_.emplace(device);
    sync_target();
    // The setup copy is not one of training's syncs.
    target_syncs_ = 0;
    sync_timer_.emplace(device);

    // Room for at least one full step of every env, however large num_envs.
    const int64_t capacity = std::max(kReplayCapacity, knobs_.num_envs);
    if (knobs_.replay_on_device) {
      device_replay_.emplace(capacity, CartPole::kObsDim, device);
    } else {
      host_replay_.emplace(capacity, CartPole::kObsDim, settings_.batch_size, device);
      host_actions_.resize(knobs_.num_envs);
      const torch::Tensor obs = env_.obs().to(torch::kCPU);
      host_obs_.assign(obs.data_ptr<float>(), obs.data_ptr<float>() + obs.numel());
    }

    // Fill to the learning start with a random policy, so that every measured
    // step includes an update.
    while (env_steps_ < kLearningStarts) collect(/*random_policy=*/true);
    random_policy_return_ = run_episodes(/*greedy=*/false).mean;
  }

  StepResult step() override {
    collect(/*random_policy=*/false);
    update();
    ++steps_;
    return {/*samples=*/1.0, /*secondary_samples=*/static_cast<double>(knobs_.num_envs)};
  }

  Metrics evaluate() override {
    const torchkit::Estimate greedy = run_episodes(/*greedy=*/true);
    return {{"mean_return", greedy.mean},
            {"mean_return_se", greedy.se},  // over the episodes
            {"random_policy_return", random_policy_return_},
            {"epsilon", epsilon()},
            {"env_steps", static_cast<double>(env_steps_)}};
  }

 protected:
  Metrics extra_stats() override {
    Metrics m{{"updates", static_cast<double>(updates_)},
              {"env_steps", static_cast<double>(env_steps_)},
              {"target_syncs", static_cast<double>(target_syncs_)},
              {"target_sync_ms", target_syncs_ > 0 ? 1e3 * sync_timer_->total_seconds() /
                                                         static_cast<double>(target_syncs_)
                                                   : 0.0},
              {"epsilon", epsilon()},
              {"skipped_steps", static_cast<double>(grad_->skipped_steps())},
              {stat::flops_per_step, flops_per_step()}};
    transfers_.add_stats(m, /*copies_per_step=*/1);  // one batch per update, host mode
    return m;
  }

 private:
  // FLOPs of one step's matmuls (2 per multiply-add): the update's online
  // forward and backward (3x a forward) and target forward on batch_size
  // rows (plus the online forward on next_obs for Double DQN), and the
  // greedy action's forward on num_envs rows.
  double flops_per_step() const {
    const auto h = static_cast<double>(knobs_.hidden);
    const double per_row = 2.0 * (CartPole::kObsDim * h + h * h + h * CartPole::kNumActions);
    const auto b = static_cast<double>(settings_.batch_size);
    const double forwards = 3.0 + 1.0 + (knobs_.double_dqn ? 1.0 : 0.0);
    return per_row * (forwards * b + static_cast<double>(knobs_.num_envs));
  }

  // Linear decay over env steps, setup's random fill included.
  double epsilon() const {
    const double progress = std::min(1.0, static_cast<double>(env_steps_) / kEpsilonDecayEnvSteps);
    return kEpsilonStart + (kEpsilonEnd - kEpsilonStart) * progress;
  }

  // One env step of every env, its transitions stored in the replay buffer.
  void collect(bool random_policy) {
    if (knobs_.replay_on_device) {
      collect_on_device(random_policy);
    } else {
      collect_through_host(random_policy);
    }
    env_steps_ += knobs_.num_envs;
  }

  // Everything stays on the device: epsilon-greedy as a where() over the
  // batch, the transition written with slice copies. No host sync, so the
  // greedy forward runs every step, exploring or not.
  void collect_on_device(bool random_policy) {
    const int64_t n = knobs_.num_envs;
    const auto longs = torch::TensorOptions().dtype(torch::kLong).device(settings_.device);
    torch::Tensor actions;
    if (random_policy) {
      actions = torch::randint(/*low=*/0, /*high=*/CartPole::kNumActions, {n}, action_gen_, longs);
    } else {
      torch::Tensor greedy;
      {
        torch::NoGradGuard no_grad;
        torchkit::AutocastScope autocast(settings_);
        greedy = online_->forward(env_.obs()).argmax(/*dim=*/1);
      }
      const torch::Tensor explore =
          torch::rand({n}, action_gen_, longs.dtype(torch::kFloat)).lt(epsilon());
      const torch::Tensor random =
          torch::randint(/*low=*/0, /*high=*/CartPole::kNumActions, {n}, action_gen_, longs);
      actions = torch::where(explore, random, greedy);
    }
    const torch::Tensor obs = env_.obs();
    const CartPoleStep out = env_.step(actions);
    device_replay_->add(obs, actions, out.reward, out.next_obs, out.terminated);
  }

  // What a host-side training loop does: decide exploration on the host (the
  // forward is skipped when every env explores, as `if random() < eps` code
  // does), read the greedy action back, send actions over, read the
  // transitions back and store them in the host ring buffer.
  void collect_through_host(bool random_policy) {
    const int64_t n = knobs_.num_envs;
    const double eps = random_policy ? 1.0 : epsilon();
    bool any_greedy = false;
    for (int64_t i = 0; i < n; ++i) {
      const bool explore = random_policy || random::unit(host_rng_) < eps;
      host_actions_[i] =
          explore ? random::uniform_int(host_rng_, 0, CartPole::kNumActions - 1) : -1;
      any_greedy = any_greedy || !explore;
    }
    if (any_greedy) {
      torch::NoGradGuard no_grad;
      torchkit::AutocastScope autocast(settings_);
      torch::Tensor greedy = online_->forward(env_.obs()).argmax(/*dim=*/1);
      {
        torchkit::PhaseTimer sync(torchkit::Phase::host_sync, settings_.device);
        greedy = greedy.to(torch::kCPU);
      }
      const int64_t* g = greedy.data_ptr<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        if (host_actions_[i] < 0) host_actions_[i] = g[i];
      }
    }
    const torch::Tensor actions =
        torch::from_blob(host_actions_.data(), {n}, torch::kLong).to(settings_.device);
    const CartPoleStep out = env_.step(actions);

    // One packed read-back per step: next_obs (4), the post-reset obs (4),
    // reward, terminated.
    constexpr int64_t kRow = 2 * CartPole::kObsDim + 2;
    torch::Tensor packed = torch::cat({out.next_obs, env_.obs(), out.reward.unsqueeze(1),
                                       out.terminated.unsqueeze(1).to(torch::kFloat)},
                                      /*dim=*/1);
    {
      torchkit::PhaseTimer sync(torchkit::Phase::host_sync, settings_.device);
      packed = packed.to(torch::kCPU);
    }
    const float* rows = packed.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
      const float* row = rows + i * kRow;
      float* obs = host_obs_.data() + i * CartPole::kObsDim;
      host_replay_->add(obs, host_actions_[i], /*reward=*/row[2 * CartPole::kObsDim],
                        /*next_obs=*/row,
                        /*terminated=*/row[2 * CartPole::kObsDim + 1] != 0.0f);
      std::copy_n(row + CartPole::kObsDim, CartPole::kObsDim, obs);
    }
  }

  void update() {
    std::optional<Batch> sampled;
    {
      // Replay sampling is this workload's input pipeline.
      torchkit::PhaseTimer phase(torchkit::Phase::input_wait, settings_.device);
      sampled = knobs_.replay_on_device ? device_replay_->sample(settings_.batch_size, sample_gen_)
                                        : host_replay_->sample(host_rng_, transfers_);
    }
    // Under cuda_graphs the update reads static copies of the batch.
    const Batch batch{step_input(0, sampled->obs), step_input(1, sampled->action),
                      step_input(2, sampled->reward), step_input(3, sampled->next_obs),
                      step_input(4, sampled->not_terminated)};
    graphed([&] { loss_ = learn(batch); });
    ++updates_;
    if (updates_ % kTargetSyncEvery == 0) sync_target();
    observe_loss(loss_);
  }

  // The update's device work: the TD target from the target network, the
  // Huber loss of the online network's Q, backward (scaled under fp16),
  // then the step: unscale, skip on inf/NaN (fp16), Adam, clear the
  // gradients; each under its phase timer. Returns the loss.
  torch::Tensor learn(const Batch& batch) {
    std::optional<torchkit::PhaseTimer> forward;
    forward.emplace(torchkit::Phase::forward, settings_.device);
    torch::Tensor target;
    {
      torch::NoGradGuard no_grad;
      torchkit::AutocastScope autocast(settings_);
      torch::Tensor next_q;
      if (knobs_.double_dqn) {
        const torch::Tensor best =
            online_->forward(batch.next_obs).argmax(/*dim=*/1, /*keepdim=*/true);
        next_q = target_->forward(batch.next_obs).gather(/*dim=*/1, best).squeeze(1);
      } else {
        next_q = target_->forward(batch.next_obs).amax(/*dim=*/1);
      }
      // Only a true termination stops the bootstrap; a time-limit truncation
      // keeps it, the episode could have gone on.
      target = torch::addcmul(batch.reward, batch.not_terminated, next_q.to(torch::kFloat),
                              /*value=*/kGamma);
    }
    torch::Tensor loss;
    {
      torchkit::AutocastScope autocast(settings_);
      const torch::Tensor q =
          online_->forward(batch.obs).gather(/*dim=*/1, batch.action.unsqueeze(1)).squeeze(1);
      loss = torch::huber_loss(q.to(torch::kFloat), target, at::Reduction::Mean, kHuberDelta);
    }
    forward.reset();
    grad_->backward(loss);
    grad_->step();
    return loss;
  }

  // Timed for the statistic target_sync_ms (the DQN guide claims in-place
  // sync takes it from ~10 ms to ~1 ms): with CUDA events on a GPU, read at
  // the end of the trial, so that timing it adds no device sync inside the
  // measured block (a sync there would slow the block being timed).
  void sync_target() {
    sync_timer_->start();
    if (knobs_.roundtrip_sync) {
      // Through host memory, as Keras set_weights(get_weights()).
      std::stringstream bytes;
      torch::serialize::OutputArchive out;
      online_->save(out);
      out.save_to(bytes);
      torch::serialize::InputArchive in;
      in.load_from(bytes, settings_.device);
      if (settings_.cuda_graphs) {
        // Loading gives the target's parameters new storage; the captured
        // update reads the old: load beside it and copy in place.
        QNet loaded(CartPole::kObsDim, knobs_.hidden, CartPole::kNumActions);
        loaded->load(in);
        torch::NoGradGuard no_grad;
        const auto from = loaded->parameters();
        for (size_t i = 0; i < target_params_.size(); ++i) target_params_[i].copy_(from[i]);
      } else {
        target_->load(in);
      }
    } else {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < target_params_.size(); ++i) target_params_[i].copy_(online_params_[i]);
    }
    sync_timer_->stop();
    ++target_syncs_;
  }

  // Mean return of kEvalEpisodes episodes run side by side on a fresh env with
  // the fixed evaluation seed. Uses only its own generators, so training's
  // streams are untouched.
  torchkit::Estimate run_episodes(bool greedy) {
    torch::NoGradGuard no_grad;
    const torch::Device device = settings_.device;
    CartPole env(kEvalEpisodes, device, kEvalSeed);
    torch::Generator gen = make_generator(device, derive_seed(kEvalSeed, kActionStream));
    const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(device);
    torch::Tensor returns = torch::zeros({kEvalEpisodes}, floats);
    torch::Tensor live = torch::ones({kEvalEpisodes}, floats.dtype(torch::kBool));
    for (int64_t t = 0; t < CartPole::kMaxEpisodeSteps; ++t) {
      torch::Tensor actions;
      if (greedy) {
        torchkit::AutocastScope autocast(settings_);
        actions = online_->forward(env.obs()).argmax(/*dim=*/1);
      } else {
        actions = torch::randint(/*low=*/0, /*high=*/CartPole::kNumActions, {kEvalEpisodes}, gen,
                                 floats.dtype(torch::kLong));
      }
      // The env resets finished episodes by itself; `live` masks what follows.
      const CartPoleStep out = env.step(actions);
      returns.add_(out.reward * live);
      live.logical_and_(out.terminated.logical_or(out.truncated).logical_not());
      if ((t + 1) % kEvalDoneCheckEvery == 0 && !live.any().item<bool>()) break;
    }
    return torchkit::mean_and_se(returns);
  }

  Knobs knobs_;
  CartPole env_;
  torch::Generator action_gen_;  // exploration on the device
  torch::Generator sample_gen_;  // replay sampling on the device
  std::mt19937_64 host_rng_;     // exploration and sampling in host mode
  QNet online_{nullptr};
  QNet target_{nullptr};
  std::vector<torch::Tensor> online_params_;
  std::vector<torch::Tensor> target_params_;
  std::unique_ptr<torch::optim::Adam> optimizer_;  // FusedAdam, capturable, under cuda_graphs
  torch::Tensor loss_;                             // the last update's loss (static when graphed)
  std::optional<torchkit::GradStep> grad_;         // after optimizer_, which it steps
  std::optional<DeviceReplay> device_replay_;
  std::optional<HostReplay> host_replay_;
  std::vector<float> host_obs_;        // host mode: the envs' current observations
  std::vector<int64_t> host_actions_;  // host mode: this step's actions
  int64_t env_steps_ = 0;              // transitions collected, setup included
  int64_t updates_ = 0;
  int64_t steps_ = 0;  // measured steps (step() calls)
  int64_t target_syncs_ = 0;
  std::optional<torchkit::DeviceTimer> sync_timer_;  // sync_target's spans since setup
  // Host mode on CUDA: each update's batch copied to the device (transfer_time).
  torchkit::TransferTimes transfers_{settings_.device};
  double random_policy_return_ = 0;
};

}  // namespace
}  // namespace gpusweep::dqn

GPUSWEEP_EXPORT_WORKLOAD(gpusweep::dqn::Dqn)
