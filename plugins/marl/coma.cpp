// marl: COMA on multi-agent grid coverage (docs/workloads.md "marl"). One step
// collects batch_size episodes of every agent on the device, then runs the
// seed's update schedule: data_passes x batch_number critic minibatches and
// one actor update on the whole batch.
#include "coverage_env.hpp"
#include "networks.hpp"

#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/estimate.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/seeding.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>
#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpusweep::marl {

using torchkit::derive_seed;
using torchkit::make_generator;
namespace {

// Canonical hyperparameters (docs/workloads.md); not knobs, so that every trial
// trains the same algorithm.
constexpr int64_t kActorHidden = 128;
constexpr int64_t kCriticHidden = 256;
constexpr double kActorLearningRate = 5e-4;
constexpr double kCriticLearningRate = 1e-3;
constexpr double kGamma = 0.99;
constexpr int64_t kTargetSyncEvery = 200;  // critic updates
constexpr int64_t kMaxAgents = 16;
constexpr int64_t kMaxBudget = 1024;
constexpr int64_t kMaxSchedule = 1000;  // batch_number, data_passes
// Evaluation always starts from the same positions, whatever the trial's
// seed, so that coverages of different trials are comparable.
constexpr int64_t kEvalEpisodes = 256;
constexpr uint64_t kEvalSeed = 20240611;

// Streams derived from the trial's seed; see torchkit/seeding.hpp.
enum Stream : uint64_t { kStartStream = 1, kActionStream = 2, kShuffleStream = 3 };
// The learner's static inputs under cuda_graphs (step_input slots).
enum Input : size_t { kAgentPartInput = 0, kTargetsInput = 1 };

torchkit::Support support() {
  torchkit::Support s;
  s.channels_last = false;
  s.input_pipeline = false;
  s.grad_accum = false;
  s.cuda_graphs = true;  // each critic minibatch update and the actor update; rollout eager
  s.reason =
      "marl has MLPs on flat features (no 4-D tensors, no cuDNN op), data from env rollouts "
      "(no input pipeline) and COMA's fixed update schedule (no micro-batches)";
  return s;
}

// This workload's own knobs. The SDK has checked each against the manifest
// (type, choices, range) and filled the defaults before the constructor runs.
struct Knobs {
  int64_t agents = 4;
  int64_t budget = 14;
  int64_t batch_number = 5;
  int64_t data_passes = 5;
  bool critic_obs = false;

  static Knobs parse(const TrialConfig& config) {
    Knobs k;
    k.agents = config.get<int64_t>("n_agents");
    k.budget = config.get<int64_t>("budget");
    k.batch_number = config.get<int64_t>("batch_number");
    k.data_passes = config.get<int64_t>("data_passes");
    k.critic_obs = config.get<bool>("critic_obs");
    return k;
  }
};

class Coma final : public torchkit::TorchWorkload {
 public:
  static Manifest manifest() {
    Manifest m;
    m.name = "marl";
    m.version = "1.1.0";
    m.description =
        "COMA on multi-agent grid coverage: n_agents agents on a 16x16 grid, budget moves each "
        "(stay/N/S/E/W), team reward = cells newly covered (3x3 around each agent). Shared "
        "actor MLP 128-128-5 on a 5x5 coverage patch, own position and agent id; centralised "
        "critic MLP 256-256-5 on the coverage map, all positions, the other agents' actions "
        "and the agent id; counterfactual advantage; one-step TD critic target through a "
        "target critic synced every 200 updates; Adam 5e-4 (actor), 1e-3 (critic). A step "
        "collects batch_size episodes, then data_passes x batch_number critic minibatches "
        "and one actor update on the whole batch.";
    m.unit = "agent_steps";
    m.secondary_unit = "episodes";
    m.quality = {"mean_coverage", "random_coverage", true,
                 "cells covered at the end of an episode (of 256) by the greedy policy, mean "
                 "over 256 episodes from fixed start positions, next to a uniformly random "
                 "policy's mean from the same starts"};
    const torchkit::Support s = support();
    m.params = torchkit::common_params(/*default_batch_size=*/128, s);
    m.params.push_back(Param::integer("n_agents", 4, 1, static_cast<double>(kMaxAgents),
                                      "agents on the grid (all share the actor)"));
    m.params.push_back(Param::integer("budget", 14, 1, static_cast<double>(kMaxBudget),
                                      "moves per agent per episode"));
    m.params.push_back(
        Param::integer("batch_number", 5, 1, static_cast<double>(kMaxSchedule),
                       "shuffled critic minibatches per pass over the batch of episodes"));
    m.params.push_back(Param::integer(
        "data_passes", 5, 1, static_cast<double>(kMaxSchedule),
        "passes over the batch per step; the critic updates batch_number x data_passes times"));
    m.params.push_back(Param::boolean(
        "critic_obs", false,
        "also give the critic each agent's own 5x5 coverage patch (COMA's paper feeds the "
        "critic the agent's observation; the canonical spec does not): without it the critic "
        "must locate the agent's surroundings in the flat map from scalar coordinates and "
        "learns little credit assignment in short runs"));
    return m;
  }

  explicit Coma(const TrialConfig& config)
      : TorchWorkload(config, support()),
        knobs_(Knobs::parse(config)),
        env_(settings_.batch_size, knobs_.agents, settings_.device),
        eval_env_(kEvalEpisodes, knobs_.agents, settings_.device),
        start_gen_(make_generator(settings_.device, derive_seed(settings_.seed, kStartStream))),
        action_gen_(make_generator(settings_.device, derive_seed(settings_.seed, kActionStream))),
        shuffle_gen_(
            make_generator(settings_.device, derive_seed(settings_.seed, kShuffleStream))) {
    const int64_t transitions = settings_.batch_size * knobs_.budget;
    if (knobs_.batch_number > transitions) {
      throw std::invalid_argument("batch_number (" + std::to_string(knobs_.batch_number) +
                                  ") exceeds the transitions per batch (batch_size x budget = " +
                                  std::to_string(transitions) + ")");
    }
    const int64_t a = knobs_.agents;
    const int64_t obs_dim = CoverageEnv::obs_dim(a);
    const int64_t state_dim = CoverageEnv::state_dim(a);
    // Weights come from the global generator, which Settings::apply has just
    // seeded; the target critic is overwritten by the sync below anyway.
    actor_ = Actor(obs_dim, kActorHidden, CoverageEnv::kNumActions);
    const int64_t patch_dim = knobs_.critic_obs ? CoverageEnv::kPatch * CoverageEnv::kPatch : 0;
    critic_ = Critic(state_dim, a, kCriticHidden, CoverageEnv::kNumActions, patch_dim);
    target_ = Critic(state_dim, a, kCriticHidden, CoverageEnv::kNumActions, patch_dim);
    settings_.prepare(*actor_);
    settings_.prepare(*critic_);
    settings_.prepare(*target_);
    critic_params_ = critic_->parameters();
    target_params_ = target_->parameters();
    for (auto& p : target_params_) p.requires_grad_(false);
    sync_target();
    target_syncs_ = 0;  // the setup copy is not one of training's syncs
    // LibTorch's Adams; under cuda_graphs FusedAdams, capturable.
    actor_opt_ = torchkit::adam_for_graphs(
        actor_->parameters(), torch::optim::AdamOptions(kActorLearningRate), settings_.cuda_graphs);
    critic_opt_ = torchkit::adam_for_graphs(
        critic_params_, torch::optim::AdamOptions(kCriticLearningRate), settings_.cuda_graphs);
    actor_grad_.emplace(settings_, *actor_opt_);
    critic_grad_.emplace(settings_, *critic_opt_);

    // The rollout writes into these every step; the learner reads them
    // flattened to N = budget x batch_size transitions.
    const int64_t t = knobs_.budget;
    const int64_t e = settings_.batch_size;
    const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(settings_.device);
    states_ = torch::empty({t, e, state_dim}, floats);
    obs_ = torch::empty({t, e, a, obs_dim}, floats);
    actions_ = torch::empty({t, e, a}, floats.dtype(torch::kLong));
    rewards_ = torch::empty({t, e}, floats);
    eval_obs_ = torch::empty({kEvalEpisodes, a, obs_dim}, floats);

    random_coverage_ = run_eval(/*greedy=*/false).mean;
    init_coverage_ = run_eval(/*greedy=*/true).mean;
  }

  StepResult step() override {
    collect();
    const torch::Tensor critic_loss = train_critic();
    train_actor();
    observe_loss(critic_loss);
    ++steps_;
    const double episodes = static_cast<double>(settings_.batch_size);
    return {/*samples=*/episodes * static_cast<double>(knobs_.budget * knobs_.agents),
            /*secondary_samples=*/episodes};
  }

  Metrics evaluate() override {
    const torchkit::Estimate greedy = run_eval(/*greedy=*/true);
    return {{"mean_coverage", greedy.mean},
            {"mean_coverage_se", greedy.se},  // over the episodes
            {"random_coverage", random_coverage_},
            {"init_coverage", init_coverage_},
            {"episodes", static_cast<double>(steps_ * settings_.batch_size)}};
  }

 protected:
  Metrics extra_stats() override {
    Metrics m{{"agent_moves", static_cast<double>(env_.agent_moves())},
              {"critic_updates", static_cast<double>(critic_updates_)},
              {"actor_updates", static_cast<double>(actor_updates_)},
              {"target_syncs", static_cast<double>(target_syncs_)},
              {"skipped_steps",
               static_cast<double>(actor_grad_->skipped_steps() + critic_grad_->skipped_steps())}};
    // Read only here: stats() is called once at the end of a trial.
    m[stat::flops_per_step] = flops_per_step();
    if (actor_loss_.defined()) m["last_actor_loss"] = actor_loss_.item<double>();
    if (steps_ > 0) m["train_coverage"] = env_.covered().mean().item<double>();
    return m;
  }

 private:
  // Under cuda_graphs one graph per critic minibatch size (the last of the
  // batch_number chunks may be shorter: 359 and 356 of 1792 transitions),
  // each with the loss its captured update writes.
  struct CriticGraph {
    CriticGraph(const torchkit::Settings& settings, int64_t rows)
        : graph(settings, "marl's critic update on " + std::to_string(rows) + " transitions") {}
    torchkit::StepGraph graph;
    torch::Tensor loss;
  };
  CriticGraph& critic_graph(int64_t rows) {
    auto it = critic_graphs_.find(rows);
    if (it == critic_graphs_.end())
      it = critic_graphs_.emplace(rows, std::make_unique<CriticGraph>(settings_, rows)).first;
    return *it->second;
  }

  // One batch of episodes with the current (sampling) policy, stored for the
  // learner. No host sync: actions are sampled on the device.
  void collect() {
    torch::NoGradGuard no_grad;
    env_.reset(start_gen_);
    const int64_t e = settings_.batch_size;
    for (int64_t t = 0; t < knobs_.budget; ++t) {
      const torch::Tensor obs = obs_[t];
      env_.state(states_[t]);
      env_.observe(obs);
      torch::Tensor logits;
      {
        torchkit::AutocastScope autocast(settings_);
        logits = actor_->forward(obs);
      }
      const torch::Tensor probs =
          torch::softmax(logits.to(torch::kFloat), /*dim=*/-1).view({-1, CoverageEnv::kNumActions});
      const torch::Tensor actions =
          torch::multinomial(probs, /*num_samples=*/1, /*replacement=*/true, action_gen_)
              .view({e, knobs_.agents});
      actions_[t].copy_(actions);
      rewards_[t].copy_(env_.step(actions));
    }
  }

  // TD targets for every transition and agent, [N, A]: reward plus the
  // discounted target-critic value of the next joint action (none after the
  // last move).
  torch::Tensor td_targets(const torch::Tensor& states, const torch::Tensor& agent_part,
                           const torch::Tensor& actions) {
    torch::NoGradGuard no_grad;
    const int64_t t = knobs_.budget;
    const int64_t e = settings_.batch_size;
    torch::Tensor y = rewards_.unsqueeze(2).expand({t, e, knobs_.agents}).clone();
    if (t == 1) return y.view({e, knobs_.agents});
    // Only the transitions after the first move are ever bootstrapped from.
    const int64_t later = (t - 1) * e;
    torch::Tensor q;
    {
      torchkit::AutocastScope autocast(settings_);
      q = target_->forward(states.narrow(/*dim=*/0, /*start=*/e, later),
                           agent_part.narrow(0, e, later));
    }
    const torch::Tensor q_next = q.to(torch::kFloat)
                                     .gather(/*dim=*/2, actions.narrow(0, e, later).unsqueeze(2))
                                     .view({t - 1, e, knobs_.agents});
    y.narrow(0, 0, t - 1).add_(q_next, /*alpha=*/kGamma);
    return y.view({t * e, knobs_.agents});
  }

  // data_passes passes over the batch's transitions in batch_number shuffled
  // minibatches; returns the last minibatch's loss (not read back here).
  torch::Tensor train_critic() {
    const int64_t n = knobs_.budget * settings_.batch_size;
    const torch::Tensor states = states_.view({n, -1});
    const torch::Tensor actions = actions_.view({n, knobs_.agents});
    torch::Tensor agent_part;
    {
      torch::NoGradGuard no_grad;
      // The patch is the first kPatch^2 columns of the actor's observation.
      const torch::Tensor patches =
          knobs_.critic_obs ? obs_.view({n, knobs_.agents, -1})
                                  .narrow(2, 0, CoverageEnv::kPatch * CoverageEnv::kPatch)
                            : torch::Tensor();
      // Static under cuda_graphs (the graphs read it), as the targets.
      agent_part = step_input(kAgentPartInput, critic_->agent_part(actions, patches));
    }
    torch::Tensor targets = step_input(kTargetsInput, td_targets(states, agent_part, actions));
    const auto longs = torch::TensorOptions().dtype(torch::kLong).device(settings_.device);
    torch::Tensor loss;
    for (int64_t pass = 0; pass < knobs_.data_passes; ++pass) {
      // The shuffle stays outside the graphs: each update copies its rows'
      // indices into its graph's static input.
      const torch::Tensor order = torch::randperm(n, shuffle_gen_, longs);
      const std::vector<torch::Tensor> chunks = order.chunk(knobs_.batch_number);
      for (size_t c = 0; c < chunks.size(); ++c) {
        const torch::Tensor& rows = chunks[c];
        CriticGraph& graph = critic_graph(rows.size(0));
        const torch::Tensor idx = graph.graph.input(0, rows);
        graph.graph.run([&] {
          {
            torchkit::PhaseTimer phase(torchkit::Phase::forward, settings_.device);
            torch::Tensor q;
            {
              torchkit::AutocastScope autocast(settings_);
              q = critic_->forward(states.index_select(/*dim=*/0, idx),
                                   agent_part.index_select(/*dim=*/0, idx));
            }
            const torch::Tensor q_taken =
                q.to(torch::kFloat)
                    .gather(/*dim=*/2, actions.index_select(/*dim=*/0, idx).unsqueeze(2))
                    .squeeze(2);
            graph.loss = torch::mse_loss(q_taken, targets.index_select(/*dim=*/0, idx));
          }
          critic_grad_->backward(graph.loss);
          critic_grad_->step();
        });
        loss = graph.loss;
        ++critic_updates_;
        if (critic_updates_ % kTargetSyncEvery == 0) {
          sync_target();
          // Later minibatches of this step, if any, bootstrap from the new
          // target (copied into the same static tensor under cuda_graphs).
          const bool last = pass + 1 == knobs_.data_passes && c + 1 == chunks.size();
          if (!last) targets = step_input(kTargetsInput, td_targets(states, agent_part, actions));
        }
      }
    }
    agent_part_ = agent_part;
    return loss.detach();
  }

  // One policy-gradient step on the whole batch with COMA's counterfactual
  // advantage: Q of the taken action minus the policy-weighted Q of all the
  // agent's actions, the others' actions held fixed.
  void train_actor() {
    const int64_t n = knobs_.budget * settings_.batch_size;
    const torch::Tensor states = states_.view({n, -1});
    const torch::Tensor actions = actions_.view({n, knobs_.agents, 1});
    graphed([&] { actor_loss_ = actor_update(states, actions); });
    ++actor_updates_;
  }

  // The actor update's device work (graphed under cuda_graphs); returns the
  // loss.
  torch::Tensor actor_update(const torch::Tensor& states, const torch::Tensor& actions) {
    const int64_t n = knobs_.budget * settings_.batch_size;
    torch::Tensor loss;
    {
      torchkit::PhaseTimer phase(torchkit::Phase::forward, settings_.device);
      torch::Tensor q;
      {
        torch::NoGradGuard no_grad;
        torchkit::AutocastScope autocast(settings_);
        q = critic_->forward(states, agent_part_);
      }
      q = q.to(torch::kFloat);
      torch::Tensor logits;
      {
        torchkit::AutocastScope autocast(settings_);
        logits = actor_->forward(obs_.view({n, knobs_.agents, -1}));
      }
      const torch::Tensor log_pi = torch::log_softmax(logits.to(torch::kFloat), /*dim=*/-1);
      const torch::Tensor baseline = (log_pi.detach().exp() * q).sum(/*dim=*/-1);
      const torch::Tensor advantage = q.gather(/*dim=*/2, actions).squeeze(2) - baseline;
      loss = -(log_pi.gather(/*dim=*/2, actions).squeeze(2) * advantage).mean();
    }
    actor_grad_->backward(loss);
    actor_grad_->step();
    return loss.detach();
  }

  // FLOPs of one step's matmuls (2 per multiply-add; backward counted as 2
  // forwards): the rollout's actor forwards on every agent of every move,
  // the target critic on the bootstrapped transitions, data_passes passes of
  // critic forward and backward over the batch, and the actor update (critic
  // forward without gradients, actor forward and backward). The critic's
  // first layer runs on the shared state once per transition and on each
  // agent's part once per agent. Elementwise ops and the target's re-runs
  // after a sync (every 200 updates) are left out.
  double flops_per_step() const {
    const auto a = static_cast<double>(knobs_.agents);
    const auto e = static_cast<double>(settings_.batch_size);
    const auto t = static_cast<double>(knobs_.budget);
    const auto actions = static_cast<double>(CoverageEnv::kNumActions);
    const auto ha = static_cast<double>(kActorHidden);
    const auto hc = static_cast<double>(kCriticHidden);
    const auto obs = static_cast<double>(CoverageEnv::obs_dim(knobs_.agents));
    const auto state = static_cast<double>(CoverageEnv::state_dim(knobs_.agents));
    const double patch =
        knobs_.critic_obs ? static_cast<double>(CoverageEnv::kPatch * CoverageEnv::kPatch) : 0.0;
    const double agent_part = a * actions + a + patch;
    const double actor_row = 2.0 * (obs * ha + ha * ha + ha * actions);
    const double critic_row = 2.0 * (state * hc + a * (agent_part * hc + hc * hc + hc * actions));
    const double n = t * e;
    const double rollout = n * a * actor_row;
    const double targets = (t - 1.0) * e * critic_row;
    const double critic = 3.0 * static_cast<double>(knobs_.data_passes) * n * critic_row;
    const double actor = n * critic_row + 3.0 * n * a * actor_row;
    return rollout + targets + critic + actor;
  }

  void sync_target() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < target_params_.size(); ++i) target_params_[i].copy_(critic_params_[i]);
    ++target_syncs_;
  }

  // Mean final coverage of kEvalEpisodes episodes from the fixed evaluation
  // starts, greedy or uniformly random. Uses only its own generators, so
  // training's streams are untouched.
  torchkit::Estimate run_eval(bool greedy) {
    torch::NoGradGuard no_grad;
    const torch::Device device = settings_.device;
    torch::Generator starts = make_generator(device, derive_seed(kEvalSeed, kStartStream));
    torch::Generator moves = make_generator(device, derive_seed(kEvalSeed, kActionStream));
    eval_env_.reset(starts);
    for (int64_t t = 0; t < knobs_.budget; ++t) {
      torch::Tensor actions;
      if (greedy) {
        eval_env_.observe(eval_obs_);
        torchkit::AutocastScope autocast(settings_);
        actions = actor_->forward(eval_obs_).argmax(/*dim=*/-1);
      } else {
        actions = torch::randint(/*low=*/0, /*high=*/CoverageEnv::kNumActions,
                                 {kEvalEpisodes, knobs_.agents}, moves,
                                 torch::TensorOptions().dtype(torch::kLong).device(device));
      }
      eval_env_.step(actions);
    }
    return torchkit::mean_and_se(eval_env_.covered());
  }

  Knobs knobs_;
  CoverageEnv env_;
  CoverageEnv eval_env_;
  torch::Generator start_gen_;    // training episodes' start positions
  torch::Generator action_gen_;   // sampled actions
  torch::Generator shuffle_gen_;  // critic minibatch order
  Actor actor_{nullptr};
  Critic critic_{nullptr};
  Critic target_{nullptr};
  std::vector<torch::Tensor> critic_params_;
  std::vector<torch::Tensor> target_params_;
  std::unique_ptr<torch::optim::Adam> actor_opt_;   // FusedAdam, capturable, under cuda_graphs
  std::unique_ptr<torch::optim::Adam> critic_opt_;  // likewise
  std::map<int64_t, std::unique_ptr<CriticGraph>> critic_graphs_;  // by minibatch rows
  // fp16 gets torchkit's gradient scaler, one per optimiser (each has its own
  // loss); after the optimisers they step.
  std::optional<torchkit::GradStep> actor_grad_;
  std::optional<torchkit::GradStep> critic_grad_;
  // The current batch, [budget, batch_size, ...]; see the constructor.
  torch::Tensor states_;
  torch::Tensor obs_;
  torch::Tensor actions_;
  torch::Tensor rewards_;
  torch::Tensor agent_part_;  // the critic's per-agent input for the batch's joint actions
  torch::Tensor eval_obs_;
  torch::Tensor actor_loss_;
  int64_t steps_ = 0;
  int64_t critic_updates_ = 0;
  int64_t actor_updates_ = 0;
  int64_t target_syncs_ = 0;
  double random_coverage_ = 0;
  double init_coverage_ = 0;
};

}  // namespace
}  // namespace gpusweep::marl

GPUSWEEP_EXPORT_WORKLOAD(gpusweep::marl::Coma)
