// The ratio of two configs' typical values (block throughputs, step times,
// or one value per trial), estimated the way the run was designed:
//
//   log y[r,c] - log x[r,c] = log ratio + a[r] + e[r,c]
//
// r: the repeat (a process per config: memory layout, thread placement and
// allocator state are sampled once per process), c: the cycle of an
// interleaved run (the blocks of x and y that ran back to back). Pairing is
// by identity, never by position: repeat r of x with repeat r of y, and
// within it the blocks of one interleave group with the same cycle, so that
// drift of the machine common to a cycle cancels. Process effects a[r] are
// their own level of variation: with two repeats or more the interval is a
// t interval over the per-repeat ratios (df = repeats - 1), which holds
// whatever the blocks within a process did; with one repeat per config it
// can only be the blocks' (adjusted for their autocorrelation), and says so.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// What the model reads of a run, computed once (index_run): the logs of its
// positive finite values in order; of its blocks with a cycle and a positive
// value, each one's (cycle, log) in order; and per cycle the mean of those
// logs, sorted by cycle. A comparison of 10,000 configs with one baseline
// reads the baseline's index 10,000 times.
struct RunIndex {
  using CycleLog = std::pair<int64_t, double>;
  std::vector<double> logs;
  std::vector<CycleLog> cycle_logs;
  // Empty when cycle_logs' cycles are strictly increasing (one block a
  // cycle): the means are then cycle_logs itself.
  std::vector<CycleLog> cycle_means;
  // An interleaved trial's usual shape, kept without cycle_logs: every
  // block has a cycle and a positive finite value, and the cycles are
  // first_cycle, first_cycle + 1, ...: cycle_logs would be
  // {first_cycle + i, logs[i]}.
  bool contiguous = false;
  int64_t first_cycle = 0;
  // Contiguous only: the sum of logs, in order. Two such runs over the same
  // cycles pair every block, and the mean of their paired differences is
  // the difference of these sums over the count: a repeat's log ratio in
  // O(1), where ablation asks for 30,000 of them on a big run.
  double log_sum = 0;

  size_t cycle_count() const { return contiguous ? logs.size() : cycle_logs.size(); }
  CycleLog cycle_log(size_t i) const {
    return contiguous ? CycleLog{first_cycle + static_cast<int64_t>(i), logs[i]} : cycle_logs[i];
  }
  // Per cycle, sorted by cycle: the mean of its blocks' logs.
  size_t mean_count() const { return cycle_means.empty() ? cycle_count() : cycle_means.size(); }
  CycleLog mean(size_t i) const { return cycle_means.empty() ? cycle_log(i) : cycle_means[i]; }
};

// One ok trial's samples, with what pairing needs.
struct RunSamples {
  int64_t repeat = 0;
  std::optional<std::string> group;  // interleave group; none: it ran alone
  std::string machine;               // where it ran (machine_key); "" unknown
  std::vector<double> values;        // positive: one per block, or one per trial
  // Parallel to values: each block's cycle in its group (empty, or none,
  // when not interleaved).
  std::vector<std::optional<int64_t>> cycles;
  // index_run's, for values and cycles as they are; none: the model
  // computes it for each comparison. With an index the model reads the
  // index alone: cycles may then be released.
  std::shared_ptr<const RunIndex> index;
};

// Sets run.index from its values and cycles (call again after changing them).
void index_run(RunSamples& run);

enum class RatioDesign {
  repeats,      // per-repeat ratios, t over repeats: process effects included
  one_process,  // one repeat of each: the blocks of one process per config
  unpaired,     // repeats that do not match: the runs compared unpaired
};

struct RatioEstimate {
  double ratio = 1;  // y over x
  double low = 1;    // interval at the requested level
  double high = 1;
  double p = 1;       // two-sided p-value of "the ratio is 1"
  double df = 0;      // degrees of freedom of the t interval
  double log_se = 0;  // standard error of log(ratio)
  RatioDesign design = RatioDesign::repeats;
  int repeats = 0;               // repeat pairs (repeats design), else runs compared
  int64_t paired_blocks = 0;     // blocks paired by cycle, over all repeats
  bool across_machines = false;  // a pair ran on different machines

  // Half the interval's width over the ratio: how precisely it is known,
  // the figure measure.precision, check and the race's confirmation stop on.
  double relative_half_width() const { return (high - low) / 2 / ratio; }
};

// nullopt when either side has too few values for an interval (one value in
// all, or runs whose repeats do not pair and a side with one run of one
// value). level in (0, 1).
// repeat_logs, when given, receives repeat_log_ratios(x, y) (computed on the
// way: a caller needing both pays for one).
std::optional<RatioEstimate> estimate_ratio(const std::vector<RunSamples>& x,
                                            const std::vector<RunSamples>& y, double level = 0.95,
                                            std::map<int64_t, double>* repeat_logs = nullptr);

// The per-repeat log ratios that estimate_ratio's repeats design averages:
// for each repeat both sides ran (with values), log y - log x of that repeat,
// its blocks paired by cycle where both trials took turns in one group.
// Keyed by repeat; empty when no repeat pairs.
std::map<int64_t, double> repeat_log_ratios(const std::vector<RunSamples>& x,
                                            const std::vector<RunSamples>& y);

// The same estimate with its interval at another level.
RatioEstimate with_level(RatioEstimate e, double level);

// "repeats", "one_process" or "unpaired".
const char* design_name(RatioDesign d);

// What the interval covers and cannot know, in words, for the note column
// ("" for the repeats design on one machine).
std::string design_note(const RatioEstimate& e);

}  // namespace gpusweep::host
