// transformer: a small causal language model trained on text from a random
// order-2 Markov chain (docs/workloads.md "transformer"). One step is grad_accum
// micro-batches of batch_size random windows and one AdamW step; it can
// save and resume its own checkpoints.
#include "checkpoint.hpp"
#include "markov_chain.hpp"
#include "model.hpp"

#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/estimate.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/seeding.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>
#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

namespace gpusweep::transformer {

using torchkit::derive_seed;
using torchkit::make_generator;
namespace {

// Canonical hyperparameters and data sizes (docs/workloads.md); not knobs, so
// that every trial trains on the same amount of the same kind of text.
constexpr int64_t kVocab = 64;
constexpr int64_t kFfnMult = 4;
constexpr double kLearningRate = 3e-4;
constexpr double kWeightDecay = 0.01;
constexpr int64_t kStreams = 256;
constexpr int64_t kStreamLength = 4096;
// Validation: this many fresh stationary windows of seq_len + 1 tokens from
// the same chain (about 16k predicted tokens at seq_len 128, a standard
// error near 0.01 nats).
constexpr int64_t kValWindows = 128;
constexpr int64_t kMaxWidth = 8192;
constexpr int64_t kMaxLayers = 64;
// Bump when the checkpoint's contents change meaning.
constexpr int64_t kCheckpointVersion = 1;

// Streams derived from the trial's seed; see torchkit/seeding.hpp.
enum Stream : uint64_t { kChainStream = 1, kCorpusStream = 2, kValStream = 3, kWindowStream = 4 };

torchkit::Support support() {
  torchkit::Support s;
  s.channels_last = false;
  s.input_pipeline = false;
  s.grad_accum = true;
  s.data_parallel = true;  // sample_windows takes the rank's slice of the global batch
  s.cuda_graphs = true;    // the step's forwards, backwards and AdamW; sampling outside
  s.reason =
      "the transformer has no 4-D tensors and no cuDNN op, and its windows are gathered on the "
      "device from a corpus resident there (no input pipeline)";
  return s;
}

// This workload's own knobs. The SDK has checked each against the manifest
// (type, choices, range) and filled the defaults before the constructor runs.
struct Knobs {
  ModelShape shape;
  std::string checkpoint_path;
  int64_t checkpoint_every = 0;
  bool resume = false;

  static Knobs parse(const TrialConfig& config) {
    Knobs k;
    k.shape.vocab = kVocab;
    k.shape.ffn_mult = kFfnMult;
    k.shape.d_model = config.get<int64_t>("d_model");
    k.shape.n_layers = config.get<int64_t>("n_layers");
    k.shape.n_heads = config.get<int64_t>("n_heads");
    k.shape.seq_len = config.get<int64_t>("seq_len");
    k.shape.fused_attention = config.get<std::string>("attention") == "fused";
    k.checkpoint_path = config.get<std::string>("checkpoint_path");
    k.checkpoint_every = config.get<int64_t>("checkpoint_every");
    k.resume = config.get<bool>("resume");
    // What one knob asks of another, which the manifest cannot say.
    if (k.shape.d_model % k.shape.n_heads != 0) {
      throw std::invalid_argument("n_heads (" + std::to_string(k.shape.n_heads) +
                                  ") must divide d_model (" + std::to_string(k.shape.d_model) +
                                  ")");
    }
    if ((k.checkpoint_every > 0 || k.resume) && k.checkpoint_path.empty()) {
      throw std::invalid_argument("checkpoint_every and resume need a checkpoint_path");
    }
    return k;
  }
};

class Transformer final : public torchkit::TorchWorkload {
 public:
  static Manifest manifest() {
    Manifest m;
    m.name = "transformer";
    m.version = "1.2.0";  // 1.2: fused attention by default, AdamW in one fused kernel call
    m.description =
        "Decoder-only transformer language model (pre-LayerNorm, learned positions, FFN 4x, "
        "vocab 64; d_model, n_layers, n_heads, seq_len as set), AdamW lr 3e-4, weight decay "
        "0.01, on text from a random hierarchical order-2 Markov chain (256 streams x 4096 "
        "tokens sampled at setup). A step is grad_accum micro-batches of batch_size random "
        "windows and one optimiser step. Can save and resume its own checkpoints.";
    m.unit = "tokens";
    m.secondary_unit = "sequences";
    m.quality = {"val_loss", "entropy_rate", false,
                 "validation cross-entropy (nats per token) on 128 fresh windows from the same "
                 "chain, over the positions that see both previous tokens, next to the chain's "
                 "exact entropy rate, the lowest loss any model can reach"};
    m.params = torchkit::common_params(/*default_batch_size=*/16, support());
    m.params.push_back(Param::integer("d_model", 128, 1, static_cast<double>(kMaxWidth),
                                      "model width (the FFN is 4x as wide)"));
    m.params.push_back(
        Param::integer("n_layers", 2, 1, static_cast<double>(kMaxLayers), "transformer blocks"));
    m.params.push_back(Param::integer("n_heads", 4, 1, static_cast<double>(kMaxWidth),
                                      "attention heads; must divide d_model"));
    m.params.push_back(Param::integer("seq_len", 128, 2, static_cast<double>(kStreamLength - 1),
                                      "tokens per training window (the context length)"));
    m.params.push_back(Param::choice(
        "attention", "fused", {"fused", "explicit"},
        "how attention is computed, the same function either way: fused = one "
        "scaled_dot_product_attention kernel, causal (flash attention on the CPU and, where it "
        "applies, on CUDA), forward and backward, never storing the T x T scores; explicit = "
        "written out: q k^T + causal mask, softmax, times v. Under precision=bf16 on a CPU "
        "the fused kernel's backward is slow: sweep both"));
    m.params.push_back(Param::text(
        "checkpoint_path", "",
        "file for this workload's checkpoints (model, optimiser, step, generator states); "
        "empty = no checkpoints"));
    m.params.push_back(Param::integer(
        "checkpoint_every", 0, 0, 1 << 30,
        "save a checkpoint to checkpoint_path after every N-th step (counted across resumes; "
        "the save is part of that step's time); 0 = never"));
    m.params.push_back(Param::boolean(
        "resume", false,
        "start from the checkpoint at checkpoint_path (it must exist and match the model shape, "
        "seed, batch_size and seq_len) instead of a fresh model"));
    return m;
  }

  explicit Transformer(const TrialConfig& config)
      : TorchWorkload(config, support()),
        knobs_(Knobs::parse(config)),
        window_gen_(make_generator(settings_.device, derive_seed(settings_.seed, kWindowStream))) {
    const torch::Device device = settings_.device;
    const int64_t t = knobs_.shape.seq_len;
    std::mt19937_64 chain_rng(derive_seed(settings_.seed, kChainStream));
    const MarkovChain chain(kVocab, chain_rng);
    entropy_rate_ = chain.entropy_rate();
    bigram_entropy_ = chain.bigram_entropy();
    std::mt19937_64 corpus_rng(derive_seed(settings_.seed, kCorpusStream));
    corpus_ = chain.sample(kStreams, kStreamLength, corpus_rng).to(device).view({-1});
    std::mt19937_64 val_rng(derive_seed(settings_.seed, kValStream));
    val_ = chain.sample(kValWindows, t + 1, val_rng).to(device);
    offsets_ = torch::arange(t + 1, torch::TensorOptions().dtype(torch::kLong).device(device));

    // Weights come from the global generator, which Settings::apply has just
    // seeded.
    model_ = LanguageModel(knobs_.shape);
    settings_.prepare(*model_);
    optimizer_ = std::make_unique<torchkit::FusedAdamW>(
        model_->parameters(), torch::optim::AdamWOptions(kLearningRate).weight_decay(kWeightDecay));
    // A captured step needs AdamW's step count on the device.
    optimizer_->capturable(settings_.cuda_graphs);
    grad_ = std::make_unique<torchkit::GradStep>(settings_, *optimizer_);
    if (knobs_.resume) {
      load_checkpoint(knobs_.checkpoint_path, training_state(), fingerprint(), device);
    }
    start_step_ = steps_;
    start_val_loss_ = validation_loss().mean;
  }

  StepResult step() override {
    std::vector<torch::Tensor> windows;
    {
      // The input: windows gathered on the device from the resident corpus
      // (no host-to-device copy: the corpus is already there), one a
      // micro-batch (static copies under cuda_graphs).
      torchkit::PhaseTimer phase(torchkit::Phase::input_wait, settings_.device);
      for (int64_t m = 0; m < settings_.grad_accum; ++m) {
        windows.push_back(step_input(static_cast<size_t>(m), sample_windows()));
      }
    }
    graphed([&] {
      for (const torch::Tensor& window : windows) {
        {
          torchkit::PhaseTimer phase(torchkit::Phase::forward, settings_.device);
          torch::Tensor logits;
          {
            torchkit::AutocastScope autocast(settings_);
            logits = model_->forward(window.narrow(/*dim=*/1, /*start=*/0, knobs_.shape.seq_len));
          }
          loss_ =
              torch::cross_entropy_loss(logits.to(torch::kFloat).view({-1, kVocab}),
                                        window.narrow(1, 1, knobs_.shape.seq_len).reshape({-1}));
        }
        grad_->backward(loss_);
      }
      grad_->step();
    });
    observe_loss(loss_);
    ++steps_;
    // Every rank holds the same state (weights, optimiser, window generator):
    // rank 0 writes it.
    if (knobs_.checkpoint_every > 0 && steps_ % knobs_.checkpoint_every == 0 &&
        settings_.rank == 0) {
      save_checkpoint(knobs_.checkpoint_path, training_state(), fingerprint());
      ++checkpoints_;
    }
    const double sequences = static_cast<double>(settings_.grad_accum * settings_.batch_size);
    return {/*samples=*/sequences * static_cast<double>(knobs_.shape.seq_len),
            /*secondary_samples=*/sequences};
  }

  Metrics evaluate() override {
    const torchkit::Estimate loss = validation_loss();
    return {{"val_loss", loss.mean},
            {"val_loss_se", loss.se},  // over the validation windows
            {"entropy_rate", entropy_rate_},
            {"bigram_entropy", bigram_entropy_},
            {"start_val_loss", start_val_loss_},
            {"step", static_cast<double>(steps_)}};
  }

 protected:
  Metrics extra_stats() override {
    // GradStep's counters include the steps a CUDA graph replayed.
    Metrics m = grad_->counters();
    m["checkpoints_saved"] = static_cast<double>(checkpoints_);
    m["start_step"] = static_cast<double>(start_step_);
    m["step"] = static_cast<double>(steps_);
    m[stat::flops_per_step] = flops_per_step();
    return m;
  }

  // FLOPs of one step's matmuls (2 per multiply-add), forward and backward
  // (3x the forward): per token and layer the q/k/v and output projections
  // (4 d^2 multiply-adds), the feed-forward (2 ffn_mult d^2) and attention's
  // scores and weighted sum (2 T d, the causal half: T d), then the vocabulary
  // head (d V); times the step's tokens. Elementwise ops are left out.
  double flops_per_step() const {
    const auto d = static_cast<double>(knobs_.shape.d_model);
    const auto t = static_cast<double>(knobs_.shape.seq_len);
    const double per_layer = 4.0 * d * d + 2.0 * static_cast<double>(kFfnMult) * d * d + t * d;
    const double per_token =
        2.0 * (static_cast<double>(knobs_.shape.n_layers) * per_layer + d * kVocab);
    const double tokens = static_cast<double>(settings_.batch_size * settings_.grad_accum) * t;
    return 3.0 * per_token * tokens;
  }

 private:
  // batch_size windows of seq_len + 1 tokens at random places of random
  // streams (never across a stream's end), [B, seq_len + 1] int64. At
  // world_size > 1 the places are drawn for the global batch (the same on
  // every rank) and this rank takes its slice.
  torch::Tensor sample_windows() {
    const int64_t span = kStreamLength - knobs_.shape.seq_len;  // possible start offsets
    torch::Tensor draw =
        torch::randint(/*low=*/0, /*high=*/kStreams * span, {settings_.global_batch(), 1},
                       window_gen_, offsets_.options());
    if (settings_.world_size > 1) {
      draw = draw.slice(/*dim=*/0, settings_.shard_begin(),
                        settings_.shard_begin() + settings_.batch_size);
    }
    const torch::Tensor starts =
        draw.div(span, /*rounding_mode=*/"floor").mul_(kStreamLength).add_(draw.remainder(span));
    return corpus_.take(starts + offsets_);
  }

  // Mean cross-entropy over the validation windows, in chunks of batch_size
  // windows (the training batch's memory). The first position of a window
  // sees one token of context, not the two the chain uses, so it is left
  // out: what remains can reach the entropy rate exactly.
  // Cross-entropy per token: each window's mean, then their mean and its
  // standard error.
  torchkit::Estimate validation_loss() {
    torch::NoGradGuard no_grad;
    const int64_t t = knobs_.shape.seq_len;
    std::vector<torch::Tensor> per_window;
    for (int64_t first = 0; first < kValWindows; first += settings_.batch_size) {
      const int64_t n = std::min(settings_.batch_size, kValWindows - first);
      const torch::Tensor window = val_.narrow(/*dim=*/0, first, n);
      torch::Tensor logits;
      {
        torchkit::AutocastScope autocast(settings_);
        logits = model_->forward(window.narrow(/*dim=*/1, /*start=*/0, t));
      }
      const torch::Tensor predicted =
          logits.narrow(1, 1, t - 1).to(torch::kFloat).reshape({-1, kVocab});
      const torch::Tensor targets = window.narrow(1, 2, t - 1).reshape({-1});
      per_window.push_back(
          torch::cross_entropy_loss(predicted, targets, /*weight=*/{}, at::Reduction::None)
              .to(torch::kDouble)
              .reshape({n, t - 1})
              .mean(/*dim=*/1));
    }
    return torchkit::mean_and_se(torch::cat(per_window));
  }

  // Under cuda_graphs AdamW counts its steps on the device: the host's
  // counts are brought up to date for a checkpoint.
  TrainingState training_state() {
    optimizer_->sync_host_steps();
    return {*model_, *optimizer_, window_gen_, steps_};
  }

  // What a checkpoint must match for the resumed run to be the same run.
  Fingerprint fingerprint() const {
    return {
        {"checkpoint_version", kCheckpointVersion}, {"vocab", kVocab},
        {"d_model", knobs_.shape.d_model},          {"n_layers", knobs_.shape.n_layers},
        {"n_heads", knobs_.shape.n_heads},          {"seq_len", knobs_.shape.seq_len},
        {"batch_size", settings_.batch_size},       {"seed", static_cast<int64_t>(settings_.seed)}};
  }

  Knobs knobs_;
  torch::Generator window_gen_;  // training windows
  torch::Tensor corpus_;         // [kStreams * kStreamLength] int64 on the device
  torch::Tensor val_;            // [kValWindows, seq_len + 1] int64 on the device
  torch::Tensor offsets_;        // [seq_len + 1] int64: 0, 1, ..., seq_len
  LanguageModel model_{nullptr};
  std::unique_ptr<torchkit::FusedAdamW> optimizer_;  // AdamW in one kernel call a step
  std::unique_ptr<torchkit::GradStep> grad_;
  torch::Tensor loss_;  // the last micro-batch's loss (static when graphed)
  double entropy_rate_ = 0;
  double bigram_entropy_ = 0;
  double start_val_loss_ = 0;
  int64_t steps_ = 0;       // optimiser steps, those before a resume included
  int64_t start_step_ = 0;  // steps_ when this trial started
  int64_t checkpoints_ = 0;
};

}  // namespace
}  // namespace gpusweep::transformer

GPUSWEEP_EXPORT_WORKLOAD(gpusweep::transformer::Transformer)
