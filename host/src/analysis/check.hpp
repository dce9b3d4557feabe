// `gpusweep check`: two builds of one workload (base and head) measured in
// one run, each config of the sweep under both, and a verdict per config
// that CI can gate on.
//
// A check is a sweep with one more grid axis, the host's own setting
// `build` ("base", "head"): the two builds of a config take turns block by
// block with every other config, so each config's head/base throughput
// ratio is paired within cycles and repeats as any ratio of a run is
// (ratio_model.hpp). Its rounds stop per config once the verdict is
// decided, as a precision run's do once a ratio is precise, so intervals are
// at the sequential level (precision.hpp).
//
// The rule, for the ratio r = head / base throughput, its interval I at
// kSequentialLevel and the tolerance t: the interval against the threshold.
//   regression     I lies wholly below 1 - t: slower by more than t, surely
//   improvement    I lies wholly above 1 + t
//   no regression  I's low end is above 1 - t: a slowdown beyond t ruled out
//   inconclusive   I straddles 1 - t (more rounds, or the budget ended), or
//                  fewer than 3 repeats of both builds are paired yet
// Judging the estimate against t instead (and the interval against 1)
// blocked a change of half the tolerance in 46% of simulated checks, and
// false alarms under A/A grew with the number of configs and looks
// (bench/results/2026-11-28-check-simulated.md); the threshold keeps both
// far from the interval's error. The quality guard (compare's
// non-inferiority test, its alpha split over the configs) and peak memory (head's largest over
// base's beyond memory_tolerance) turn any verdict into a regression.
#pragma once

#include "analysis/compare.hpp"
#include "analysis/precision.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host {

// The default throughput tolerance (a ratio's distance from 1). Simulated
// checks of 4 configs at this machine's spread (processes 1.5% apart, at most
// 20 rounds: bench/results/2026-11-28-check-simulated.md): at 3%, A/A checks
// ended undecided in 0.1-10.7% of runs under position effects, drift, heavy
// tails and failures, false alarms in at most 0.2%, and a 5% slowdown was
// caught in at least 99.8%; at 2%, 16.7-71.2% of A/A checks ended undecided.
constexpr double kDefaultCheckTolerance = 0.03;
constexpr double kDefaultMemoryTolerance = 0.10;
// Seconds of measuring before a check calls its undecided configs
// inconclusive: about 20 rounds of the quickstart's 8 trials.
constexpr double kDefaultCheckBudgetS = 300;

struct CheckOptions {
  double tolerance = kDefaultCheckTolerance;
  double memory_tolerance = kDefaultMemoryTolerance;
  double max_quality_loss = 0.01;  // relative, as compare's
};

// A check's settings as its stored spec carries them ("check": {...});
// defaults for what it leaves out.
CheckOptions check_options(const Json& check);

enum class CheckVerdict { no_regression, improvement, inconclusive, regression };
const char* to_string(CheckVerdict v);

struct CheckPair {
  Json config;  // the config without its build
  const ConfigSamples* base = nullptr;
  const ConfigSamples* head = nullptr;
  std::optional<RatioEstimate> ratio;  // head over base, at kSequentialLevel
  std::optional<QualityComparison> quality;
  std::optional<double> memory_ratio;  // head's peak memory over base's
  CheckVerdict throughput = CheckVerdict::inconclusive;
  bool quality_loss = false;   // head's quality shown worse than base's beyond the margin
  bool memory_growth = false;  // head's peak memory beyond memory_tolerance
  CheckVerdict verdict = CheckVerdict::inconclusive;
  // One line: why this verdict ("5.1% slower, 3.2% to 7.0%: beyond the 2.0%
  // tolerance"), and what else a reader must know (failed trials, quality).
  std::string reason;
  std::vector<std::string> notes;
};

// A ratio's change in words: "4.8% slower", "0.9% faster".
std::string change_words(double ratio);

// The pairs of a check's configs (as gather_configs returns them), in config
// order. A config present under one build only (the other's trials are not
// planned yet) is left out.
std::vector<CheckPair> check_pairs(const std::vector<ConfigSamples>& configs,
                                   const CheckOptions& options);

// The worst verdict of the pairs (regression over inconclusive over the
// rest); no_regression when there are none.
CheckVerdict overall(const std::vector<CheckPair>& pairs);

// A look of a check's rounds (SweepRun): a pair is done once its verdict is
// decided; both of its configs are then done. Nothing is a baseline.
PrecisionStatus check_status(const std::vector<ConfigSamples>& configs, const CheckOptions& options,
                             const std::set<int64_t>& done_before = {});

// "2 of 4 configs decided; widest open ±1.8% (#3)" for progress lines.
std::string check_summary(const PrecisionStatus& s);

// The config without its build key.
Json without_build(const Json& config);

}  // namespace gpusweep::host
