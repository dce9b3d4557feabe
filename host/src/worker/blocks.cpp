// One measured block of a trial (its turn, the plugin's measured window and
// device clock, its steps timed to the device's sync, its event), and the
// check that the blocks were long enough to measure.
#include "worker/trial.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "protocol/events.hpp"
#include "spec/sweep.hpp"
#include "support/descriptive.hpp"
#include "worker/gate.hpp"
#include "worker/ranks.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

namespace gpusweep::host::detail {

// The plugin's measured window (GPUSWEEP_EXT_MEASURE_WINDOW), when it has
// one: begins before measured steps, ends before an evaluation.
void Trial::mark_window(bool begin) {
  if (window_ == nullptr) return;
  check(begin ? window_->begin(inst_) : window_->end(inst_), Phase::measure, steps_done_);
  if (ranks_ != nullptr) ranks_->command({{"op", "window"}, {"begin", begin}});
}

// Between turns of an interleaved trial: its background work stops, so
// that none of it runs in another trial's turn, and starts again after.
void Trial::next_turn(bool unmeasured) {
  if (!gate_.gated()) return;
  if (turns_ != nullptr) check(turns_->pause(inst_), Phase::measure, steps_done_);
  if (ranks_ != nullptr) ranks_->command({{"op", "pause"}});
  gate_.await_turn(unmeasured);
  if (turns_ != nullptr) check(turns_->resume(inst_), Phase::measure, steps_done_);
  if (ranks_ != nullptr) ranks_->command({{"op", "resume"}});
}

// The block's device time by the plugin's device clock (CUDA events), or
// nothing on a device without one: then it is not asked again.
void Trial::begin_device_clock() {
  if (clock_ != nullptr) check(clock_->begin(inst_), Phase::measure, steps_done_);
}
std::optional<double> Trial::end_device_clock() {
  if (clock_ == nullptr) return std::nullopt;
  double seconds = 0;
  const gpusweep_status st = clock_->end(inst_, &seconds);
  if (st == GPUSWEEP_STATUS_SKIPPED) {
    clock_ = nullptr;
    return std::nullopt;
  }
  check(st, Phase::measure, steps_done_);
  return seconds;
}

// One measured block, in its turn (taken here unless turn_taken):
// steps_per_block steps timed with the device synced at its end; emitted,
// and its time kept in block_seconds_. Its seconds, and its samples in
// *samples.
double Trial::run_block(int64_t b, double* samples, bool turn_taken) {
  if (!turn_taken) next_turn();
  double secondary = 0;
  *samples = 0;
  const auto t0 = Clock::now();
  begin_device_clock();
  run_steps(measure_.steps_per_block, Phase::measure, samples, &secondary);
  const std::optional<double> device_seconds = end_device_clock();
  check(plugin_->synchronize(inst_), Phase::measure, steps_done_);
  const double seconds = lockstep(seconds_since(t0), samples, &secondary);
  steps_done_ += measure_.steps_per_block;
  event::Block block;
  block.idx = b;
  block.steps = measure_.steps_per_block;
  block.seconds = seconds;
  block.samples = *samples;
  block.secondary_samples = secondary;
  block.device_seconds = device_seconds;
  if (ranks_ != nullptr) {
    block.rank_seconds = rank_seconds_;
    const auto slowest = std::max_element(rank_seconds_.begin(), rank_seconds_.end());
    slowest_.resize(rank_seconds_.size());
    ++slowest_[static_cast<size_t>(slowest - rank_seconds_.begin())];
  }
  out_.emit(block.to_json());
  block_seconds_.push_back(seconds);
  device_timed_ = device_timed_ || device_seconds.has_value();
  return seconds;
}

// Fails the trial when its median block is shorter than the protocol's
// minimum (MeasureSpec::min_block_s), naming the steps_per_block that
// would reach it.
void Trial::check_block_length(const std::vector<double>& seconds, bool device_timed) {
  const double automatic = device_timed    ? kMinBlockDeviceS
                           : gate_.gated() ? kMinBlockInterleavedCpuS
                                           : kMinBlockCpuS;
  const double minimum = measure_.min_block_s >= 0 ? measure_.min_block_s : automatic;
  if (minimum <= 0 || seconds.empty()) return;
  const double median = quantile(seconds, 0.5);
  if (median >= minimum) return;
  // A short block is mostly fixed cost, so its time over its steps
  // overstates a step: time runs of doubling length until one reaches the
  // minimum (the trial fails anyway, so these steps cost it nothing), and
  // advise twice that, so that a noisy block stays above it.
  double per_step = std::max(median, 1e-9) / static_cast<double>(measure_.steps_per_block);
  const auto run_of = [&](int64_t n) {
    double samples = 0, secondary = 0;
    const auto t0 = Clock::now();
    run_steps(n, Phase::measure, &samples, &secondary);
    check(plugin_->synchronize(inst_), Phase::measure, steps_done_);
    steps_done_ += n;
    return lockstep(seconds_since(t0), &samples, &secondary);
  };
  for (int64_t n = 2 * measure_.steps_per_block; n <= (int64_t{1} << 26); n *= 2) {
    const double took = run_of(n);
    per_step = took / static_cast<double>(n);
    if (took < minimum) continue;
    // A run the scheduler interrupted overstates a step, and advice from it
    // fell short (a busy machine's test saw it): the fastest of three.
    for (int k = 0; k < 2; ++k) per_step = std::min(per_step, run_of(n) / static_cast<double>(n));
    break;
  }
  const auto steps = static_cast<int64_t>(std::ceil(2 * minimum / per_step));
  char fix[160];
  if (measure_.block_s > 0) {
    std::snprintf(fix, sizeof fix, "Set measure.block_s to %.3g or more", 2 * minimum);
  } else {
    std::snprintf(fix, sizeof fix, "Set measure.steps_per_block to %lld or more",
                  static_cast<long long>(steps));
  }
  char text[512];
  std::snprintf(text, sizeof text,
                "blocks too short to measure: the median block took %.3g us, under "
                "measure.min_block_s = %.3g us%s; the clock reads and the block's sync would "
                "be a visible part of every sample. %s (or min_block_s to 0 to accept such "
                "blocks)",
                median * 1e6, minimum * 1e6,
                measure_.min_block_s >= 0 ? ""
                : device_timed            ? " (auto, on a GPU)"
                : gate_.gated()           ? " (auto, for blocks taking turns: each starts cold)"
                                          : " (auto)",
                fix);
  end_trial("failed", Phase::measure, steps_done_, text);
}

}  // namespace gpusweep::host::detail
