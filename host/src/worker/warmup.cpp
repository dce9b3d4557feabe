// A trial's warmup: its steps, measure.block_s's block length, the minimum
// and stable warmups, and the statistics snapshot at its end.
#include "worker/trial.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "spec/sweep.hpp"
#include "worker/ranks.hpp"
#include "worker/worker.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpusweep::host::detail {

// steps of warmup, synchronised; their seconds.
double Trial::warm(int64_t steps) {
  double samples = 0, secondary = 0;
  const auto t0 = Clock::now();
  run_steps(steps, Phase::warmup, &samples, &secondary);
  steps_done_ += steps;
  check(plugin_->synchronize(inst_), Phase::warmup, steps_done_);
  return lockstep(seconds_since(t0), &samples, &secondary);
}

// The steps a block of about `seconds` takes, for measure.block_s: runs of
// doubling length (each synchronised, as a block is) until one lasts a
// tenth of it, then the faster of that run and one more as the step time
// (a run the scheduler interrupted overstates a step). These are warmup
// steps: training, unmeasured.
int64_t Trial::steps_for(double seconds) {
  int64_t n = 1;
  double took = warm(n);
  if (took >= seconds) return 1;  // one step is a block already: no second look
  while (took < 0.1 * seconds && n < (int64_t{1} << 24)) {
    n *= 2;
    took = warm(n);
  }
  const double per_step = std::min(took, warm(n)) / static_cast<double>(n);
  return std::max<int64_t>(1, std::llround(seconds / std::max(per_step, 1e-9)));
}

// Whether this trial measures its device's busy share after warmup:
// diagnose trials, and sweeps that ask (measure.busy_share).
bool Trial::probes_busy() const {
  return busy_ != nullptr && (args_.diagnose || measure_.busy_share) && ranks_ == nullptr;
}

// One more block of warmup steps with the device's activity recorded
// (GPUSWEEP_EXT_DEVICE_BUSY): the share of its wall time the device was
// busy; nothing where the device keeps no records (the CPU).
std::optional<double> Trial::busy_share() {
  const gpusweep_status started = busy_->begin(inst_);
  if (started == GPUSWEEP_STATUS_SKIPPED) return std::nullopt;  // the CPU: no extra steps
  check(started, Phase::warmup, steps_done_);
  const auto t0 = Clock::now();
  double samples = 0, secondary = 0;
  run_steps(measure_.steps_per_block, Phase::warmup, &samples, &secondary);
  steps_done_ += measure_.steps_per_block;
  // The steps' wall time to the device's sync, before end() turns the
  // records into events (which takes its own time, none of it the steps').
  check(plugin_->synchronize(inst_), Phase::warmup, steps_done_);
  const double wall_s = seconds_since(t0);
  double busy_s = 0;
  const gpusweep_status st = busy_->end(inst_, &busy_s);
  if (st == GPUSWEEP_STATUS_SKIPPED || !(wall_s > 0)) return std::nullopt;
  check(st, Phase::warmup, steps_done_);
  return std::min(1.0, busy_s / wall_s);
}

void Trial::warmup() {
  out_.emit(event::Phase{Phase::warmup, measure_.warmup_steps}.to_json());
  const auto t0 = Clock::now();
  event::WarmupDone done;
  // The first step on its own: the transient the rest of warmup hides.
  if (measure_.warmup_steps > 0) done.first_step_s = warm(1);
  warm(std::max<int64_t>(0, measure_.warmup_steps - 1));
  // Parallel starts: the warmup above ran beside other trials' setups; what
  // is timed from here on (the block's length, warmup by time) takes a
  // turn of its own, as a block does.
  // The wait for it is no warmup: warmup by time and warmup_s leave it out.
  double waited_s = 0;
  if (args_.parallel_starts &&
      (measure_.block_s > 0 || measure_.min_warmup_s > 0 || measure_.stable_warmup ||
       probes_busy() || args_.probe_matmul_s > 0)) {
    const auto w0 = Clock::now();
    next_turn();
    waited_s = seconds_since(w0);
  }
  if (args_.parallel_starts && args_.probe_matmul_s > 0) {
    // The matmul peak setup() leaves to a turn of the trial's own.
    const auto p0 = Clock::now();
    event::Probe probe;
    probe.matmul = probe_matmul(plugin_, args_.probe_matmul_s);
    out_.emit(probe.to_json());
    waited_s += seconds_since(p0);
  }
  if (measure_.block_s > 0) {
    measure_.steps_per_block = steps_for(measure_.block_s);
    done.block_steps = measure_.steps_per_block;
  }
  if (measure_.min_warmup_s > 0) {
    // Windows of a quarter block until warmup has lasted long enough.
    const int64_t steps = std::max<int64_t>(1, (measure_.steps_per_block + 3) / 4);
    while (seconds_since(t0) - waited_s < measure_.min_warmup_s) warm(steps);
  }
  if (measure_.stable_warmup) {
    // Windows of a quarter block until the last three agree.
    const int64_t steps = std::max<int64_t>(1, (measure_.steps_per_block + 3) / 4);
    std::vector<double> windows;
    bool stable = false;
    while (!stable && static_cast<int64_t>(windows.size()) < kMaxWarmupWindows) {
      windows.push_back(warm(steps));
      if (windows.size() < 3) continue;
      const auto [lo, hi] = std::minmax_element(windows.end() - 3, windows.end());
      stable = *hi <= (1 + kStableWarmupTolerance) * *lo;
    }
    done.window_steps = steps;
    done.windows = windows;
    done.stable = stable;
  }
  if (probes_busy()) {
    if (const auto share = busy_share()) done.gpu_busy_share = *share;
  }
  warmup_s_ = seconds_since(t0) - waited_s;
  done.seconds = warmup_s_;
  out_.emit(done.to_json());
  {
    // The totals so far (input wait; diagnose's phase times), so that the
    // host counts the measured steps only.
    const char* stats = nullptr;
    check(plugin_->stats(inst_, &stats), Phase::warmup, steps_done_);
    const Json snapshot = parse_or_raw(stats);
    out_.emit(event::StatsSnapshot{snapshot, steps_done_}.to_json());
    if (ranks_ != nullptr) {
      // Every rank's all-reduce wait so far, to count the measured one.
      comm_before_ = {exposed_of(snapshot)};
      ranks_->set_phase(Phase::warmup, steps_done_);
      for (const Json& other : ranks_->stats()) comm_before_.push_back(exposed_of(other));
    }
  }
}

}  // namespace gpusweep::host::detail
