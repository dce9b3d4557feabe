// The worker side of the measurement protocol (docs/architecture.md): warmup,
// blocks of steps with a device sync at block edges only, evaluation, stats.
// Internal to worker/: the Trial class, whose members live in trial.cpp (the
// protocol's order, setup, the steps), warmup.cpp, blocks.cpp,
// evaluation.cpp, target_tracking.cpp and rank_stats.cpp, and the helpers
// those share.
#pragma once

#include "protocol/phase.hpp"
#include "protocol/worker_args.hpp"
#include "spec/sweep.hpp"
#include "worker/loader.hpp"

#include <gpusweep/plugin.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

class EventWriter;
class Ranks;

namespace detail {

class Gate;

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The matmul peak through the plugin's matmul-probe extension; null when the
// plugin offers none (or the probe failed: its message instead).
Json probe_matmul(const gpusweep_plugin* t, double seconds);

// A trial in this process: with the plugin already loaded (a fork server's
// child) or loading it first.
int run_trial(const WorkerArgs& args, const LoadedPlugin* preloaded);

// The measurement protocol of one trial: setup, warmup, measured blocks with
// evaluations between them, the final statistics. Any failing call ends the
// process with a result event naming the phase (see fail()).
class Trial {
 public:
  Trial(const LoadedPlugin& plugin, const WorkerArgs& args, const MeasureSpec& m, EventWriter& out,
        Gate& gate, Ranks* ranks)
      : plugin_(plugin.table),
        manifest_(plugin.manifest),
        args_(args),
        measure_(m),
        out_(out),
        gate_(gate),
        ranks_(ranks) {}

  [[noreturn]] void run();

 private:
  // trial.cpp: the trial's end, and the steps every phase runs.
  [[noreturn]] void end_trial(const std::string& status, Phase phase, int64_t at_step,
                              const std::string& message);
  void await_claim();
  void check(gpusweep_status st, Phase phase, int64_t at_step);
  void run_steps(int64_t n, Phase phase, double* samples, double* secondary);
  double lockstep(double own, double* samples, double* secondary);
  void setup();

  // warmup.cpp: the steps before the measured ones.
  double warm(int64_t steps);
  int64_t steps_for(double seconds);
  bool probes_busy() const;
  std::optional<double> busy_share();
  void warmup();

  // blocks.cpp: one measured block, and the check of the blocks' length.
  void mark_window(bool begin);
  void next_turn(bool unmeasured = false);
  void begin_device_clock();
  std::optional<double> end_device_clock();
  double run_block(int64_t b, double* samples, bool turn_taken = false);
  void check_block_length(const std::vector<double>& seconds, bool device_timed);

  // evaluation.cpp: evaluations, and the measured phase of a number of blocks.
  // clock: under measure.target, the training seconds and samples so far.
  Json evaluate(Phase phase, std::optional<std::pair<double, double>> clock = std::nullopt,
                double* seconds = nullptr);
  void measure();

  // target_tracking.cpp: the measured phase under measure.target.
  std::pair<std::string, bool> target_metric(const TargetSpec& target) const;
  void measure_to_target(const TargetSpec& target);

  // rank_stats.cpp: a data-parallel trial's statistics over its ranks.
  void add_rank_stats(Json& stats);
  static double exposed_of(const Json& stats);
  static std::vector<double> take_series(Json& stats);

  const gpusweep_plugin* plugin_;  // the plugin's function table
  std::string manifest_;           // the trial's workload's (workload_manifest)
  const WorkerArgs& args_;
  MeasureSpec measure_;  // the sweep's measure keys, as this trial runs them
  EventWriter& out_;
  // Looked up once per trial, not at every window edge.
  const gpusweep_ext_measure_window* window_ =
      find_extension<gpusweep_ext_measure_window>(plugin_, GPUSWEEP_EXT_MEASURE_WINDOW);
  const gpusweep_ext_turns* turns_ =
      find_extension<gpusweep_ext_turns>(plugin_, GPUSWEEP_EXT_TURNS);
  const gpusweep_ext_device_timer* clock_ =
      find_extension<gpusweep_ext_device_timer>(plugin_, GPUSWEEP_EXT_DEVICE_TIMER);
  const gpusweep_ext_device_busy* busy_ =
      find_extension<gpusweep_ext_device_busy>(plugin_, GPUSWEEP_EXT_DEVICE_BUSY);
  Gate& gate_;
  Ranks* ranks_;                      // world_size > 1: the other ranks; else nullptr
  std::vector<int64_t> slowest_;      // per rank: the measured blocks it was slowest in
  std::vector<double> rank_seconds_;  // the last run's seconds, per rank
  std::vector<double> comm_before_;   // per rank: exposed all-reduce seconds at warmup's end
  gpusweep_instance* inst_ = nullptr;
  int64_t steps_done_ = 0;
  double warmup_s_ = 0;                // the warmup's time (on a target's clock)
  std::vector<double> block_seconds_;  // every measured block's time
  bool device_timed_ = false;          // some block was timed by the device clock
};

}  // namespace detail

}  // namespace gpusweep::host
