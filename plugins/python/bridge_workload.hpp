// What the python and script workloads share: a LibTorch workload whose
// step, evaluation, stats and background work are an embedded Python
// object's (embed.hpp), with torchkit's settings, device and statistics.
#pragma once

#include <gpusweep/runtime_info.hpp>
#include <gpusweep/torchkit/torch_workload.hpp>

#include "embed.hpp"

#include <string>

namespace gpusweep::python {

class BridgeWorkload : public torchkit::TorchWorkload {
 public:
  // spec: the module a python workload runs, or empty for the script
  // workload (embed.hpp's Workload); py_config: what the Python side gets.
  BridgeWorkload(const TrialConfig& config, const torchkit::Support& support,
                 const std::string& spec, const Json& py_config)
      : TorchWorkload(config, support),
        py_(spec, py_config, settings_.device.str(), torchkit::diagnostics_enabled()) {}

  static Json runtime() {
    auto r = RuntimeInfo::from_json(TorchWorkload::runtime());
    r.python = build_version();
    r.python_interpreter = interpreter();
    // Called after create(): the packages the workload imported by then.
    if (Json packages = imported_packages(); !packages.empty()) r.python_packages = packages;
    return r.to_json();
  }

  StepResult step() override {
    const auto [samples, secondary] = py_.step();
    return {samples, secondary};
  }

  Metrics evaluate() override { return numbers(py_.evaluate()); }

  // torchkit's (peak memory, threads) under the Python side's own.
  Metrics stats() override {
    Metrics m = TorchWorkload::stats();
    for (const auto& [k, v] : numbers(py_.stats())) m[k] = v;
    return m;
  }

  // The Python side's background work (the SDK's loaders, a script's child
  // processes) stops between turns and between measured windows
  // (evaluations), as torchkit's does: nothing is built off the clock and
  // served free in the next turn.
  void pause_background() override {
    TorchWorkload::pause_background();
    py_.pause();
  }
  void resume_background() override {
    TorchWorkload::resume_background();
    py_.resume();
  }
  void begin_measurement() override {
    py_.resume();
    TorchWorkload::begin_measurement();
  }
  void end_measurement() override {
    TorchWorkload::end_measurement();
    py_.pause();
  }

  // The numbers of a JSON object (an evaluation's, the stats).
  static Metrics numbers(const Json& j) {
    Metrics m;
    for (const auto& [k, v] : j.items()) {
      if (v.is_number()) m[k] = v.get<double>();
    }
    return m;
  }

 private:
  // Named in full: within a workload class, Workload is the SDK's base.
  python::Workload py_;
};

}  // namespace gpusweep::python
