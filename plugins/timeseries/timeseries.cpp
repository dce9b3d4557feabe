// timeseries: an LSTM one-step-ahead forecaster on synthetic hourly series
// (docs/workloads.md "timeseries"). Windows come from the input pipeline; the
// knobs are the seed guide's (model size, window length), and its sync_every
// claim is the common setting of that name.
#include "fused_lstm.hpp"
#include "series.hpp"

#include <gpusweep/random.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/estimate.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/input_pipeline.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>
#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpusweep::timeseries {
namespace {

// Canonical hyperparameters and data (docs/workloads.md); not knobs, so that every
// trial trains the same task.
constexpr double kLearningRate = 1e-3;
constexpr int64_t kSeries = 64;
constexpr int64_t kLength = 4000;
constexpr int64_t kTrainLength = kLength * 8 / 10;  // the last 20% is held out
constexpr int64_t kSeasonalLag = 24;                // the seasonal-naive forecast's lag
// Validation forecasts every kValStride-th held-out step of every series
// (64 x 100 = 6400 windows; the series' random phases cover the cycles): a
// standard error near 0.5% of the MAE, at an eighth of the cost of every step.
constexpr int64_t kValStride = 8;
// Windows per validation forward: bounds the LSTM's saved gates
// (chunk x seq_len x 4 hidden floats).
constexpr int64_t kValChunk = 1024;
constexpr int64_t kMaxHidden = 4096;
constexpr int64_t kMaxLayers = 8;
constexpr int64_t kMaxSeqLen = 1024;

enum Stream : uint64_t { kDataStream = 1 };

// LSTM(1 -> hidden, num_layers, batch_first) -> Linear(hidden -> 1) on the
// last step's output. The parameters (and their initialisation) are always
// torch::nn::LSTM's; `fused` runs them through fused_lstm_layer instead of
// the module's own forward: the same function, a cheaper backward.
class ForecasterImpl : public torch::nn::Module {
 public:
  ForecasterImpl(int64_t hidden, int64_t layers, bool fused)
      : lstm_(
            register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(/*input_size=*/1, hidden)
                                                        .num_layers(layers)
                                                        .batch_first(true)))),
        head_(register_module("head", torch::nn::Linear(/*in=*/hidden, /*out=*/1))),
        fused_(fused) {
    // Module::to() swaps parameter data in place, so these handles stay valid
    // after the model moves to its device.
    auto params = lstm_->named_parameters();
    for (int64_t l = 0; l < layers; ++l) {
      const std::string n = std::to_string(l);
      layers_.push_back({params["weight_ih_l" + n], params["weight_hh_l" + n],
                         params["bias_ih_l" + n], params["bias_hh_l" + n]});
    }
  }

  // windows: [batch, seq_len, 1] -> forecasts [batch, 1].
  torch::Tensor forward(const torch::Tensor& windows) {
    if (!fused_) {
      const torch::Tensor out = std::get<0>(lstm_->forward(windows));
      return head_->forward(out.select(/*dim=*/1, /*index=*/-1));
    }
    torch::Tensor x = windows.transpose(0, 1).contiguous();  // time-major
    for (const auto& w : layers_) x = fused_lstm_layer(x, w[0], w[1], w[2], w[3]);
    return head_->forward(x[x.size(0) - 1]);
  }

 private:
  torch::nn::LSTM lstm_;
  torch::nn::Linear head_;
  bool fused_;
  std::vector<std::array<torch::Tensor, 4>> layers_;  // w_ih, w_hh, b_ih, b_hh per layer
};
TORCH_MODULE(Forecaster);

// This workload's own knobs. The SDK has checked each against the manifest
// (type, choices, range) and filled the defaults before the constructor runs.
struct Knobs {
  int64_t hidden_size = 64;
  int64_t num_layers = 2;
  int64_t seq_len = 30;
  std::string lstm_impl = "auto";

  static Knobs parse(const TrialConfig& config) {
    Knobs k;
    k.hidden_size = config.get<int64_t>("hidden_size");
    k.num_layers = config.get<int64_t>("num_layers");
    k.seq_len = config.get<int64_t>("seq_len");
    k.lstm_impl = config.get<std::string>("lstm_impl");
    return k;
  }
};

const torchkit::Support kSupport = [] {
  torchkit::Support s;
  s.channels_last = false;
  s.input_pipeline = true;
  s.cudnn = true;  // ATen's LSTM runs on cuDNN on CUDA
  s.grad_accum = true;
  s.data_parallel = true;  // make_batch takes the rank's slice of the global batch
  s.sync_every = true;
  s.precision = true;
  s.cuda_graphs = true;  // supervised_step graphs the forward, backward and Adam
  s.reason = "the LSTM has no 4-D tensors (channels_last)";
  return s;
}();

class Timeseries final : public torchkit::TorchWorkload {
 public:
  static Manifest manifest() {
    Manifest m;
    m.name = "timeseries";
    m.version = "1.3.0";  // 1.3: val_mae declared as a target metric
    m.description =
        "LSTM forecaster: LSTM(1 -> hidden_size, num_layers, batch_first) -> Linear(hidden -> 1) "
        "on the last step, predicting the next value of a window of seq_len values. 64 "
        "synthetic hourly series of 4000 steps (linear trend, daily and weekly seasonality, "
        "Gaussian noise, amplitudes per series), standardised per series with training-part "
        "statistics, last 20% held out. Adam 1e-3, MSE. The input pipeline draws random "
        "training windows. A step is one optimiser step on batch_size x grad_accum windows.";
    m.unit = "sequences";
    m.quality = {"val_mae", "seasonal_naive_mae", false,
                 "mean absolute error (standardised units) of one-step-ahead forecasts at every "
                 "8th held-out step of every series (6400 windows), next to the seasonal-naive "
                 "forecast's (the value 24 steps earlier) on the same steps; initial_val_mae is "
                 "the untrained model's"};
    // What a time-to-quality target may name: an error, so at least 0.
    m.metrics = {{"val_mae", false, 0.0, std::nullopt, "validation MAE, standardised units"}};
    m.params = torchkit::common_params(/*default_batch_size=*/128, kSupport);
    m.params.push_back(Param::integer(
        "hidden_size", 64, 1, static_cast<double>(kMaxHidden),
        "LSTM hidden units per layer (canonical 64); compute per step grows about as its square"));
    m.params.push_back(Param::integer("num_layers", 2, 1, static_cast<double>(kMaxLayers),
                                      "stacked LSTM layers (canonical 2); compute grows linearly"));
    m.params.push_back(Param::integer(
        "seq_len", 30, 1, static_cast<double>(kMaxSeqLen),
        "window length in steps fed to the LSTM for each forecast (canonical 30); the LSTM "
        "runs its steps one after another, so step time grows linearly"));
    m.params.push_back(Param::choice(
        "lstm_impl", "auto", {"auto", "fused", "aten"},
        "how the LSTM runs (same parameters, same function): aten = torch::nn::LSTM "
        "(LibTorch 2.x runs it on oneDNN on CPU, cuDNN on CUDA); fused = one autograd node per "
        "layer with the backward through time written out (CPU only; the CPU default under "
        "LibTorch 1.13, whose LSTM recorded every cell op; 0.98x [0.80, 1.18] ATen's speed on "
        "2.15, so no longer the default); auto = aten"));
    return m;
  }

  explicit Timeseries(const TrialConfig& config)
      : TorchWorkload(config, kSupport),
        knobs_(Knobs::parse(config)),
        data_(
            make_series(kSeries, kLength, kTrainLength, derive_seed(settings_.seed, kDataStream))),
        model_(build_model(knobs_, settings_)),
        // LibTorch's Adam; under cuda_graphs FusedAdam, capturable.
        optimizer_(torchkit::adam_for_graphs(
            model_->parameters(), torch::optim::AdamOptions(kLearningRate), settings_.cuda_graphs)),
        grad_(settings_, *optimizer_),
        pipeline_(settings_,
                  [this](int64_t /*index*/, std::mt19937_64& rng) { return make_batch(rng); }) {
    track(pipeline_);
    make_validation_set();
    initial_val_mae_ = validation_errors().first.mean;
  }

  StepResult step() override {
    return supervised_step(
        pipeline_, grad_, [this](const torch::Tensor& window) { return model_->forward(window); },
        [](const torch::Tensor& forecast, const torch::Tensor& next) {
          return torch::mse_loss(forecast, next);
        });
  }

  Metrics evaluate() override {
    const auto [mae, mse] = validation_errors();
    return {{"val_mae", mae.mean},
            {"val_mae_se", mae.se},  // over the validation windows
            {"val_mse", mse},
            {"seasonal_naive_mae", seasonal_naive_mae_},
            {"initial_val_mae", initial_val_mae_},
            {"optimizer_steps", static_cast<double>(grad_.optimizer_steps())}};
  }

 protected:
  Metrics extra_stats() override { return grad_.counters(); }

 private:
  static Forecaster build_model(const Knobs& knobs, const torchkit::Settings& settings) {
    const bool cpu = settings.device.is_cpu();
    if (knobs.lstm_impl == "fused" && !cpu) {
      throw Skipped("lstm_impl=fused runs on the CPU only; on " + settings.device.str() +
                    " use lstm_impl=auto or aten (cuDNN)");
    }
    // auto was fused on CPU under LibTorch 1.13; on 2.x ATen's LSTM is as fast
    // (bench/README.md, "LibTorch 1.13 workarounds, re-decided").
    const bool fused = knobs.lstm_impl == "fused";
    Forecaster model(knobs.hidden_size, knobs.num_layers, fused);
    settings.prepare(*model);
    return model;
  }

  // The input pipeline's work for one batch: batch_size windows drawn
  // uniformly (with replacement) from the training part of random series.
  // Returns {windows [B, seq_len, 1], next values [B, 1]}. Touches only the
  // immutable series. At world_size > 1 the draws are the global batch's
  // (world_size x batch_size windows, the same on every rank) and this rank
  // keeps its slice, so that the ranks together train on what one process
  // with the global batch would.
  torchkit::Batch make_batch(std::mt19937_64& rng) const {
    const int64_t b = settings_.batch_size;
    const int64_t first = settings_.shard_begin();
    const int64_t len = knobs_.seq_len;
    torch::Tensor windows = torch::empty({b, len, 1});
    torch::Tensor next = torch::empty({b, 1});
    float* w = windows.data_ptr<float>();
    float* y = next.data_ptr<float>();
    for (int64_t g = 0; g < settings_.global_batch(); ++g) {
      const int64_t series = random::uniform_int(rng, 0, data_.count - 1);
      // The target of the last window is the last training value.
      const float* s =
          data_.series(series) + random::uniform_int(rng, 0, data_.train_length - len - 1);
      const int64_t i = g - first;
      if (i < 0 || i >= b) continue;  // another rank's
      std::memcpy(w + i * len, s, static_cast<size_t>(len) * sizeof(float));
      y[i] = s[len];
    }
    return {windows, next};
  }

  // Windows ending just before every kValStride-th held-out step (their
  // inputs may reach back into the training part, as a forecaster's would),
  // on the device; and the seasonal-naive error on the same steps.
  void make_validation_set() {
    const int64_t len = knobs_.seq_len;
    const int64_t per_series = (data_.length - data_.train_length + kValStride - 1) / kValStride;
    const int64_t n = data_.count * per_series;
    torch::Tensor windows = torch::empty({n, len, 1});
    torch::Tensor next = torch::empty({n, 1});
    float* w = windows.data_ptr<float>();
    float* y = next.data_ptr<float>();
    double naive_error = 0;
    int64_t row = 0;
    for (int64_t i = 0; i < data_.count; ++i) {
      const float* s = data_.series(i);
      for (int64_t t = data_.train_length; t < data_.length; t += kValStride, ++row) {
        std::memcpy(w + row * len, s + t - len, static_cast<size_t>(len) * sizeof(float));
        y[row] = s[t];
        naive_error += std::abs(static_cast<double>(s[t]) - s[t - kSeasonalLag]);
      }
    }
    seasonal_naive_mae_ = naive_error / static_cast<double>(n);
    val_windows_ = settings_.to_device(windows);
    val_next_ = settings_.to_device(next);
  }

  // {MAE, MSE} of the model's forecasts on the validation windows, in the
  // trial's precision (so that what bf16 costs in quality shows).
  // The mean absolute error (with its standard error over the windows) and
  // the mean squared error.
  std::pair<torchkit::Estimate, double> validation_errors() {
    torch::NoGradGuard no_grad;
    model_->eval();
    std::vector<torch::Tensor> forecasts;
    const int64_t n = val_windows_.size(0);
    for (int64_t begin = 0; begin < n; begin += kValChunk) {
      torchkit::AutocastScope autocast(settings_);
      forecasts.push_back(model_->forward(val_windows_.slice(/*dim=*/0, begin, begin + kValChunk))
                              .to(torch::kFloat));
    }
    model_->train();
    const torch::Tensor error = torch::cat(forecasts) - val_next_;
    const torchkit::Estimate mae =
        torchkit::mean_and_se(error.abs().flatten(/*start_dim=*/1).mean(1));
    return {mae, error.square().mean().item<double>()};
  }

  Knobs knobs_;
  SeriesSet data_;  // immutable after setup
  Forecaster model_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  torchkit::GradStep grad_;
  torch::Tensor val_windows_;  // on the device
  torch::Tensor val_next_;     // on the device
  double seasonal_naive_mae_ = 0;
  double initial_val_mae_ = 0;
  // Last: its loader threads read the members above, so it must start after
  // them and stop before them.
  torchkit::InputPipeline pipeline_;
};

}  // namespace
}  // namespace gpusweep::timeseries

GPUSWEEP_EXPORT_WORKLOAD(gpusweep::timeseries::Timeseries)
