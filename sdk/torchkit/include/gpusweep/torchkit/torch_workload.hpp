// Base class for LibTorch workloads: holds the applied common settings and
// implements the device synchronisation and statistics every plugin shares.
#pragma once

#include <gpusweep/torchkit/runtime.hpp>
#include <gpusweep/torchkit/settings.hpp>
#include <gpusweep/workload.hpp>

namespace gpusweep::torchkit {

class TorchWorkload : public Workload {
 public:
  explicit TorchWorkload(const TrialConfig& config) : settings_(Settings::apply(config)) {}

  void synchronize() override { torchkit::synchronize(settings_.device); }

  Metrics stats() override {
    Metrics m = extra_stats();
    m["peak_memory_bytes"] = peak_memory_bytes(settings_.device);
    return m;
  }

  static Json runtime() { return runtime_info(); }

  const Settings& settings() const { return settings_; }

 protected:
  // Workload-specific counters added to stats().
  virtual Metrics extra_stats() { return {}; }

  Settings settings_;
};

}  // namespace gpusweep::torchkit
