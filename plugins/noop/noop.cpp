// noop: the orchestrator's own yardstick. A step does nothing, or spins for
// spin_us microseconds, so that the host's per-trial and per-step costs can
// be measured without a model in the way. With learn_steps > 0 it also
// "learns": its quality rises linearly from 0 to 1 over L steps, L drawn
// per seed from a lognormal with median learn_steps and coefficient of
// variation learn_cv, so that a time to a quality target has a known
// distribution (0.9 reached after 0.9 L steps).
#include <gpusweep/random.hpp>
#include <gpusweep/workload.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace {

class Noop final : public gpusweep::Workload {
 public:
  static gpusweep::Manifest manifest() {
    gpusweep::Manifest m;
    m.name = "noop";
    m.version = "1.2.0";  // 1.1: the learning mode (learn_steps, learn_cv); 1.2: eval_ms
    m.description = "Does no work (or spins for spin_us); measures the host's own cost.";
    m.unit = "steps";
    m.quality = {"quality", "", true, "constant 1: noop learns nothing"};
    m.params = {
        gpusweep::Param::real("spin_us", 0, 0, 1e7, "busy-wait per step, in microseconds"),
        gpusweep::Param::integer("batch_size", 1, 1, 1 << 20, "samples reported per step"),
        gpusweep::Param::integer("seed", 0, 0, 4294967295.0,
                                 "seeds learn_steps' draw (otherwise unused)"),
        gpusweep::Param::integer("setup_ms", 0, 0, 600000, "sleep in create(), in milliseconds"),
        gpusweep::Param::real("learn_steps", 0, 0, 1e12,
                              "median steps for quality to rise from 0 to 1 (0: constant 1)"),
        gpusweep::Param::real("learn_cv", 0.2, 0, 10,
                              "coefficient of variation of those steps from seed to seed"),
        gpusweep::Param::real("eval_ms", 0, 0, 600000, "busy-wait in evaluate(), in milliseconds"),
    };
    m.params[1].common = true;
    m.params[2].common = true;
    m.metrics = {{"quality", true, 0.0, 1.0, "0 to 1"}};
    return m;
  }

  explicit Noop(const gpusweep::TrialConfig& config)
      : spin_(std::chrono::duration<double, std::micro>(config.get_or<double>("spin_us", 0))),
        eval_spin_(std::chrono::duration<double, std::milli>(config.get_or<double>("eval_ms", 0))),
        batch_(static_cast<double>(config.get_or<long long>("batch_size", 1))) {
    const double median = config.get_or<double>("learn_steps", 0);
    if (median > 0) {
      // Lognormal: log L ~ N(log median, s^2), cv^2 = exp(s^2) - 1.
      const double cv = config.get_or<double>("learn_cv", 0.2);
      gpusweep::random::SplitMix64 rng(
          static_cast<uint64_t>(config.get_or<long long>("seed", 0)) * 0x9E3779B97F4A7C15ULL + 1);
      const double s = std::sqrt(std::log1p(cv * cv));
      learn_ = median * std::exp(gpusweep::random::normal(rng, 0.0, s));
    }
    const auto setup_ms = config.get_or<long long>("setup_ms", 0);
    if (setup_ms > 0) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(setup_ms);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  }

  gpusweep::StepResult step() override {
    busy(spin_);
    ++steps_;
    return {batch_, 0};
  }

  gpusweep::Metrics evaluate() override {
    busy(eval_spin_);
    const double quality = learn_ > 0 ? std::min(1.0, static_cast<double>(steps_) / learn_) : 1.0;
    return {{"quality", quality}, {"quality_se", 0.0}, {"steps", double(steps_)}};
  }

 private:
  template <class Duration>
  static void busy(Duration d) {
    if (d.count() <= 0) return;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
    while (std::chrono::steady_clock::now() < until) {
    }
  }

  std::chrono::duration<double, std::micro> spin_;
  std::chrono::duration<double, std::milli> eval_spin_;
  double batch_;
  double learn_ = 0;  // steps to quality 1 for this seed; 0: constant 1
  long long steps_ = 0;
};

}  // namespace

GPUSWEEP_EXPORT_WORKLOAD(Noop)
