// Turns a worker's event stream and exit into a trial outcome: the status
// (ok, failed, oom, skipped, timeout, crashed, interrupted), block samples,
// evaluations, statistics, environment and the summary of the protocol.
#pragma once

#include "protocol/events.hpp"
#include "spec/manifest.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <optional>
#include <string>

namespace gpusweep::host {

struct ExitInfo {
  std::optional<int> exit_code;  // set when the worker exited normally
  std::optional<int> signal;     // set when a signal ended it
  bool timed_out = false;        // the host ended it after timeout_s
  double silent_s = 0;           // > 0: the host ended it after this long without a heartbeat
  bool interrupted = false;      // the host ended it on Ctrl-C
  double timeout_s = 0;
  // Kills by the kernel's OOM killer in the worker's memory cgroup during
  // its life (0 when none, or when the cgroup does not say).
  int64_t oom_kills = 0;
};

class TrialCollector {
 public:
  TrialCollector(const PluginManifest& manifest, const MeasureSpec& measure)
      : manifest_(manifest), measure_(measure) {}

  // Feeds one protocol line and returns its event, decoded; malformed
  // lines are counted (and reported with the outcome), not fatal.
  std::optional<event::Event> on_line(const std::string& line);
  void on_event(const event::Event& event);

  // The outcome after the worker is gone. stderr_tail/bytes are the
  // captured stream.
  db::TrialOutcome finish(const ExitInfo& exit, const std::string& stderr_tail,
                          int64_t stderr_bytes) const;

  // Interleaved trials: the cycle of the turn the worker takes now; the
  // blocks that follow are stamped with it.
  void on_turn(int64_t cycle) { cycle_ = cycle; }
  // A statistic the host knows of the trial (not the worker), stored with it.
  void add_stat(const std::string& name, double value) {
    metrics_.push_back({"stat", 0, name, value});
  }

  Phase phase() const { return phase_; }
  int64_t blocks_done() const { return static_cast<int64_t>(blocks_.size()); }
  // The measured blocks' seconds so far (adaptive capping's turn order).
  double blocks_seconds() const { return blocks_seconds_; }
  const Json& runtime() const { return runtime_; }

 private:
  // What each event adds to the outcome; the events that add nothing
  // (hello, heartbeat, await...) are heard by others.
  void on(const event::Phase& e);
  void on(const event::Loaded& e);
  void on(const event::Runtime& e);
  void on(const event::Block& e);
  void on(const event::Eval& e);
  void on(const event::Target& e);
  void on(const event::WarmupDone& e);
  void on(const event::StatsSnapshot& e);
  void on(const event::Probe& e);
  void on(const event::Stats& e);
  void on(const event::MemoryCap& e);
  void on(const event::Result& e);
  template <class Unheard>
  void on(const Unheard&) {}
  void add_stats(const std::vector<std::pair<std::string, double>>& stats);  // as stats at step 0
  // Why a trial timed out: silent (no heartbeat) or past timeout_s, and
  // where it was (phase, blocks done).
  std::string timeout_error(const ExitInfo& exit) const;
  // The statistics the blocks and the last stats and evaluation give:
  // device clock, data-parallel communication, quality standard error.
  void add_derived_stats(std::vector<db::MetricSample>& metrics) const;
  const PluginManifest& manifest_;
  MeasureSpec measure_;
  Phase phase_ = Phase::start;
  std::vector<db::BlockSample> blocks_;
  double blocks_seconds_ = 0;
  std::vector<db::MetricSample> metrics_;
  Json last_eval_ = Json::object();
  Json stats_ = Json::object();
  Json warmup_stats_ = Json::object();  // the plugin's stats after warmup
  std::optional<int64_t> cycle_;
  Json runtime_ = Json::object();
  std::optional<event::Result> result_;
  std::optional<double> setup_s_;
  double evaluate_s_ = 0;
  int64_t malformed_lines_ = 0;
};

// The summary of a finished trial's blocks (throughput distribution, step
// times), with memory and quality from the plugin's stats and evaluation.
// warmup_stats: the plugin's stats after warmup (the input wait counts from
// there).
db::Summary summarize(const PluginManifest& manifest, const MeasureSpec& measure,
                      const std::vector<db::BlockSample>& blocks, const Json& last_eval,
                      const Json& stats, const Json& warmup_stats = Json::object());

// Host and device clocks of a block disagree when they differ by more than
// this share of the host's time: the device idled within the block (the
// host could not keep it fed), or the device's events were not on the
// trial's stream.
constexpr double kClockTolerance = 0.10;

// The quality's standard error over the last evaluation's episodes or
// batches (the plugin's `<metric>_se`), as the stat quality_se: compare's
// non-inferiority test uses it (analysis/quality.hpp).
void add_quality_se(const PluginManifest& manifest, const Json& last_eval,
                    std::vector<db::MetricSample>& metrics);

// Blocks timed by the device's clock too: stat device_time_fraction (device
// seconds over host seconds) and clock_disagreeing_blocks (beyond
// kClockTolerance). Nothing when no block has a device time.
void add_device_clock_stats(const std::vector<db::BlockSample>& blocks,
                            std::vector<db::MetricSample>& metrics);

// A data-parallel trial: stat dp_comm_share, the measured blocks' share of
// time in all-reduce that backward did not hide (step by step the least any
// rank waited, summed: dp_comm_exposed_measured_s; the rest of a rank's
// wait is for slower ranks), and dp_imbalance_share, the ranks' mean wait
// above that least, summed over the steps, over the blocks' time. Nothing
// for a trial of one rank.
void add_data_parallel_stats(const Json& stats, const Json& warmup_stats,
                             const std::vector<db::BlockSample>& blocks,
                             std::vector<db::MetricSample>& metrics);

// Host facts for the environment table (hostname, OS, CPU, cores, version),
// merged with a worker's runtime report, with a fingerprint over all of it.
db::EnvironmentInfo make_environment(const Json& runtime);

}  // namespace gpusweep::host
