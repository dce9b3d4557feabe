// noop: the orchestrator's own yardstick. A step does nothing, or spins for
// spin_us microseconds, so that the host's per-trial and per-step costs can
// be measured without a model in the way.
#include <gpusweep/workload.hpp>

#include <chrono>

namespace {

class Noop final : public gpusweep::Workload {
 public:
  static gpusweep::Manifest manifest() {
    gpusweep::Manifest m;
    m.name = "noop";
    m.version = "1.0.0";
    m.description = "Does no work (or spins for spin_us); measures the host's own cost.";
    m.unit = "steps";
    m.quality = {"quality", "", true, "constant 1: noop learns nothing"};
    m.params = {
        gpusweep::Param::real("spin_us", 0, 0, 1e7, "busy-wait per step, in microseconds"),
        gpusweep::Param::integer("batch_size", 1, 1, 1 << 20, "samples reported per step"),
        gpusweep::Param::integer("seed", 0, 0, 4294967295.0, "unused; kept for uniform sweeps"),
        gpusweep::Param::integer("setup_ms", 0, 0, 600000, "sleep in create(), in milliseconds"),
    };
    m.params[1].common = true;
    m.params[2].common = true;
    return m;
  }

  explicit Noop(const gpusweep::TrialConfig& config)
      : spin_(std::chrono::duration<double, std::micro>(config.get_or<double>("spin_us", 0))),
        batch_(static_cast<double>(config.get_or<long long>("batch_size", 1))) {
    const auto setup_ms = config.get_or<long long>("setup_ms", 0);
    if (setup_ms > 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(setup_ms);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  }

  gpusweep::StepResult step() override {
    if (spin_.count() > 0) {
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(spin_);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    ++steps_;
    return {batch_, 0};
  }

  gpusweep::Metrics evaluate() override {
    return {{"quality", 1.0}, {"quality_se", 0.0}, {"steps", double(steps_)}};
  }

 private:
  std::chrono::duration<double, std::micro> spin_;
  double batch_;
  long long steps_ = 0;
};

}  // namespace

GPUSWEEP_EXPORT_WORKLOAD(Noop)
