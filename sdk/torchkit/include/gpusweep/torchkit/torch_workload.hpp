// Base class for LibTorch workloads: holds the applied common settings and
// implements the device synchronisation and statistics every plugin shares
// (peak memory, input wait, loss reads).
#pragma once

#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/input_pipeline.hpp>
#include <gpusweep/torchkit/runtime.hpp>
#include <gpusweep/torchkit/settings.hpp>
#include <gpusweep/workload.hpp>

namespace gpusweep::torchkit {

class TorchWorkload : public Workload {
 public:
  explicit TorchWorkload(const TrialConfig& config, const Support& support = {})
      : settings_(Settings::apply(config, support)) {}

  void synchronize() override { torchkit::synchronize(settings_.device); }

  Metrics stats() override {
    Metrics m = extra_stats();
    m["peak_memory_bytes"] = peak_memory_bytes(settings_.device);
    m["loss_reads"] = static_cast<double>(loss_reads_);
    m["os_threads"] = process_threads();
    if (read_any_) m["last_loss"] = last_loss_;
    if (pipeline_ != nullptr) m["input_wait_s"] = pipeline_->wait_seconds();
    for (const auto& [name, value] : phase_stats()) m[name] = value;  // diagnose trials only
    return m;
  }

  static Json runtime() { return runtime_info(); }
  static const void* extension(const char* id) { return torchkit::extension(id); }

  const Settings& settings() const { return settings_; }

 protected:
  // Workload-specific counters added to stats().
  virtual Metrics extra_stats() { return {}; }

  // Call once per step with the step's loss: reads it back to the host (a
  // device sync) only every sync_every steps, as the setting says.
  void observe_loss(const torch::Tensor& loss) {
    if (settings_.should_sync(loss_steps_++)) {
      PhaseTimer sync(Phase::host_sync, settings_.device);
      last_loss_ = loss.item<double>();
      read_any_ = true;
      ++loss_reads_;
    }
  }

  // Makes stats() report this pipeline's input wait.
  void track(const InputPipeline& pipeline) { pipeline_ = &pipeline; }

  Settings settings_;

 private:
  int64_t loss_steps_ = 0;
  int64_t loss_reads_ = 0;
  double last_loss_ = 0;
  bool read_any_ = false;
  const InputPipeline* pipeline_ = nullptr;
};

}  // namespace gpusweep::torchkit
