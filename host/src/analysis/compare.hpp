// `gpusweep compare`: every config of a sweep against its baseline, with the
// throughput ratio and its 95% interval from the run's design (ratio_model:
// blocks paired by cycle, repeats as their own level), a verdict, and the
// quality change with its interval and a non-inferiority test.
#pragma once

#include "analysis/quality.hpp"
#include "analysis/ratio_model.hpp"
#include "analysis/significance.hpp"
#include "analysis/stored.hpp"
#include "analysis/time_to_target.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// One config of a sweep, its repeats pooled.
struct ConfigSamples {
  int64_t config_index = 0;
  Json config;
  std::vector<double> throughput;  // samples/s of every block of every ok repeat
  // One per ok repeat, for pairing: indexed, their values moved into
  // throughput (gather_configs).
  std::vector<RunSamples> runs;
  std::vector<QualitySample> quality;       // one per ok repeat (with its standard error)
  std::optional<double> peak_memory_bytes;  // the largest of the repeats
  std::optional<bool> higher_is_better;
  std::string unit;
  int64_t trials = 0;
  int64_t ok = 0;
  std::string problem;  // status and error of a failed repeat, if any
  // The largest share of an ok repeat's life it ran alongside other trials
  // (--jobs > 1; stat overlap_fraction): its timings include contention.
  double overlap_fraction = 0;
  // A run with measure.target: each ok repeat's time to the target (or its
  // training time when censored).
  std::vector<TargetTime> target_times;
  // A data-parallel config (world_size > 1): each ok repeat's share of block
  // time in all-reduce that backward did not hide (stat dp_comm_share), and
  // the gradient bytes a step all-reduces.
  std::vector<double> comm_share;
  std::optional<double> allreduce_bytes_per_step;
  // The intra-op threads its trials ran with (stat intra_op_threads, each
  // rank's at world_size > 1), when they said.
  std::optional<double> threads;
  // The second throughput's unit (tokens) and how many of them a sample
  // carries (each ok repeat's ratio of the two throughputs); the
  // samples a step takes; torch.compile's seconds of each ok repeat; the
  // FLOPs of a step where the workload counted them (each ok repeat's); the
  // device's matmul
  // peak (FLOP/s) where a trial measured it.
  std::string secondary_unit;
  std::vector<double> secondary_per_sample;
  std::optional<double> samples_per_step;
  std::vector<double> compile_s;
  std::vector<double> flops_per_step;
  std::optional<double> peak_flops;
};

// A config's step in its own terms: its second throughput (tokens/s), the
// FLOP/s it achieved and their share of the measured matmul peak (model
// FLOPs utilisation); nothing where a part is unknown.
struct StepFigures {
  std::optional<double> secondary_throughput;
  std::optional<double> achieved_flops;
  std::optional<double> mfu;
};
// From the config's throughput (config_throughput's, which the caller has:
// a median over every block, not computed again).
StepFigures step_figures(const ConfigSamples& c, std::optional<double> throughput);

// A config that ran alongside others for more than this share of a repeat's
// life is flagged wherever it is compared.
constexpr double kOverlapFlag = 0.05;

// Which of a run's rounds a view reads. A tune run's racing rounds selected
// its winner because it looked best in them: ratios from them flatter it (the
// winner's curse), so compare, best and report read its fresh confirmation
// rounds by default, and the racing rounds only when asked (selection data).
enum class Rounds { all, confirmation };
// Rounds::confirmation for a tune run (its spec's tune.race) unless
// selection_data; Rounds::all for any other run.
Rounds rounds_for(const SweepSpec& spec, bool selection_data);
// Whether a run's rounds stop once its intervals are narrow (measure.precision,
// or a tune run's confirmation): its intervals are then at the sequential
// level (CompareOptions::sequential).
bool stops_when_precise(const SweepSpec& spec);
// Whether trial t is one of those rounds.
bool in_rounds(const db::TrialRecord& t, Rounds rounds);

// Configs with their repeats pooled, of the trials in `rounds`; without_blocks
// skips the block samples (throughput and runs stay empty) for callers that
// need only the summaries. read, when given, receives the run's trials as
// read (every round, TrialFields::brief): a caller needing both reads them
// once.
std::vector<ConfigSamples> gather_configs(db::Store& store, int64_t sweep_id,
                                          bool with_blocks = true, Rounds rounds = Rounds::all,
                                          std::vector<StoredTrial>* read = nullptr);
// The same from the run's trials as already read (stored_trials, any
// fields): a caller that reads them whole for its own use does not read
// them twice.
std::vector<ConfigSamples> gather_configs(db::Store& store, int64_t sweep_id,
                                          const std::vector<StoredTrial>& trials,
                                          bool with_blocks = true, Rounds rounds = Rounds::all);

// A trial as a run to pair (repeat, interleave group, machine); its values
// are the caller's to add.
RunSamples run_of(const StoredTrial& t);

// A config whose block throughputs vary by more than this (coefficient of
// variation) is flagged noisy wherever it is shown.
constexpr double kNoisyCv = 0.10;

struct ComparisonRow {
  const ConfigSamples* config = nullptr;
  bool baseline = false;
  std::optional<RatioEstimate> ratio;  // with its interval, p-value and design
  std::optional<Verdict> verdict;
  // Why there is a ratio but no verdict (trials on different machines).
  std::string withheld;
  // Quality against the baseline's, with its interval and a non-inferiority
  // verdict at max_quality_loss (quality.hpp).
  std::optional<QualityComparison> quality;
};

// One minus the intervals' level, and the relative quality loss still called
// non-inferior, unless a command is told otherwise.
constexpr double kDefaultAlpha = 0.05;
constexpr double kDefaultMaxQualityLoss = 0.01;

struct CompareOptions {
  Json baseline = Json::object();  // partial config; empty = config #1
  double alpha = kDefaultAlpha;
  // The run looked after every round (measure.precision): intervals at the
  // sequential level (precision.hpp), which keeps 1 - alpha coverage.
  bool sequential = false;
  // Give verdicts for pairs whose trials ran on different machines (a merged
  // cluster run); by default their ratio is shown and the verdict withheld.
  bool across_machines = false;
  double max_quality_loss = kDefaultMaxQualityLoss;  // relative
  // The smallest throughput change called faster or slower (significance.hpp).
  double min_effect = kMinEffect;
};

// The options every view reads a run with unless told otherwise: the
// sweep's baseline, sequential intervals for a run that stops when precise.
CompareOptions options_for(const SweepSpec& spec);

// The level of compare's intervals: 1 - alpha, or the sequential level for a
// run that looked after every round.
double interval_level(const CompareOptions& options);

// A config's throughput: the one figure compare, best, results, the report,
// serve and export all show for it. The median of the block throughputs of
// its ok repeats, pooled; nothing without blocks.
std::optional<double> config_throughput(const ConfigSamples& c);

// Fewer repeats than this give a t interval too wide to act on, or none
// over processes at all: every view says so beside the verdict.
constexpr int kFewRepeats = 3;

// What a reader must know beside a row's ratio and verdict, a phrase each
// (noisy, one process, few repeats, the baseline failed, quality, ran
// alongside others): every view that shows a verdict shows these.
std::vector<std::string> comparison_notes(const ComparisonRow& row);
// The same with the config's block cv already at hand (cv_of its
// throughput), so that a caller showing it does not compute it twice.
std::vector<std::string> comparison_notes(const ComparisonRow& row, double cv);

// Throws UsageError when the baseline matches no config or several. A
// baseline with no ok trial gives no ratios: every other row's withheld says
// why.
std::vector<ComparisonRow> compare_configs(const std::vector<ConfigSamples>& configs,
                                           const CompareOptions& options);

// One knob's marginal effect: throughput at `to` over throughput at `from`,
// holding the other knobs fixed, over every combination of their values.
// Its interval comes from the per-config ratio model (ratio_model.hpp): for
// each repeat, the knob's log effect is the mean over the pairs of that
// repeat's paired log ratio (repeat r of one config with repeat r of the
// other, blocks paired by cycle), and the interval is t over those repeats
// (df = repeats - 1): the pairs share the repeats' degrees of freedom, so a
// knob is known about as well as the per-config ratios it summarises. It is
// the interval of the average effect over the other knobs' values; how much
// the pairs disagree (an interaction) is the range pair_min..pair_max. When
// the pairs ran different repeats (a precision run's later rounds run only
// the configs not yet precise), the effect goes through the baseline: each
// config's ratio to it over all its repeats, the pairs' differences averaged,
// with a variance that counts what a repeat's configs share (see
// through_baseline in compare_ablation.cpp), so that a pair of a config
// that stopped after 3 rounds and one that ran 8 is not judged on the 3
// they share.
struct AblationRow {
  std::string knob;
  Json from;
  Json to;
  int pairs = 0;     // combinations of the other knobs where both ran ok
  double ratio = 1;  // geometric mean of the per-combination ratios
  double low = NAN;  // interval at the compare's level (sequential for precision runs)
  double high = NAN;
  int repeats = 0;        // repeats shared by every pair (the t interval's n), 0 if none
  double df = 0;          // the interval's degrees of freedom
  double pair_min = NAN;  // the smallest and largest per-combination ratio
  double pair_max = NAN;
  // How the interval was made when not t over shared repeats, and what it
  // cannot know (as design_note); "" for repeats shared by every pair.
  std::string note;
};

// A run with measure.target: each config's time to the target against the
// baseline's (time_to_target.hpp), beside its throughput ratio.
struct TargetRow {
  const ConfigSamples* config = nullptr;
  bool baseline = false;
  TimeSummary times;
  std::optional<TimeRatio> ratio;  // config over baseline, paired by seed
  std::string verdict;             // "faster to target", "slower to target", ...
  // Faster per sample and slower to the target, or the reverse: both
  // intervals apart from 1, on opposite sides.
  bool inversion = false;
};

// rows: compare_configs' on the same configs (their throughput verdicts).
std::vector<TargetRow> compare_targets(const std::vector<ComparisonRow>& rows,
                                       const CompareOptions& options);

// The row with the lowest median time to target (Kaplan-Meier); a config
// that over half of its seeds never reached has no median and cannot be
// first. Nothing when none has one.
std::optional<size_t> first_to_target(const std::vector<TargetRow>& rows);

// For each grid key with several values, each value against the key's first,
// with intervals at options' level (alpha; sequential for precision runs).
std::vector<AblationRow> ablation(const std::vector<ConfigSamples>& configs, const Json& grid,
                                  const CompareOptions& options = {});

}  // namespace gpusweep::host
