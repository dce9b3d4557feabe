// Rounds until precise (measure.precision): after each round of repeats, is
// every config's ratio to the baseline known well enough to stop?
//
// A config is done when its 95% interval is narrow (half-width at most the
// target, relative to the ratio), or when it is clearly apart from the
// baseline: an interval at a stricter, spent level excludes 1 by more than
// the target. Looking again and again must not inflate false verdicts:
//   - stopping for width depends on the spread of the per-repeat ratios
//     alone, not on where they lie (for normal data the mean and the sample
//     variance are independent), but it stops when that spread happens to be
//     small, so the intervals are taken at kSequentialLevel;
//   - stopping for a difference does depend on where they lie, so each look
//     k spends a share of a separate error budget, alpha_k = kSeparationAlpha
//     * 6 / (pi^2 k^2), which sums to kSeparationAlpha over any number of
//     looks (a Bonferroni confidence sequence).
// ratio_model_test's A/A sequences and bench/stat_honesty.sh measure what
// this keeps.
#pragma once

#include "analysis/compare.hpp"

#include <set>
#include <vector>

namespace gpusweep::host {

// The level of every interval of a run that looked after each round, for a
// nominal 95%: a t interval at 95% undercovers once rounds stop when it is
// narrow (they stop when the spread of the repeats happens to be small). At
// 98.5% it keeps 95% coverage under the looks from 3 initial repeats on
// (measure.precision refuses fewer), whatever the noise's size against the
// target and its shape: precision_test's grid of repeats x sigma/target x
// Gaussian, t(3) and Laplace noise, with rounds in a shuffled order under a
// position effect, gives at most about 4% false verdicts in any cell (98%
// gave 5-6% at 2 repeats and sigma about 1.5-2 times the target).
constexpr double kSequentialLevel = 0.985;
// The same for another alpha: the miss rate scaled as at 95%.
inline double sequential_level(double alpha) { return 1 - alpha * (1 - kSequentialLevel) / 0.05; }

// The error budget of the stops for a difference, over all looks.
constexpr double kSeparationAlpha = 0.01;

// The level of look k's (1-based) interval for the stop for a difference.
double separation_level(int look);

struct ConfigPrecision {
  int64_t config_index = 0;
  bool baseline = false;
  std::optional<double> half_width;  // of the interval at kSequentialLevel, relative
  bool precise = false;              // half_width <= target
  bool separated = false;            // clearly apart from the baseline
  bool no_data = false;              // no interval, and none to come (no ok trial)
  bool earlier = false;              // done at an earlier look: it stays done
  bool done() const { return baseline || precise || separated || no_data || earlier; }
};

struct PrecisionStatus {
  std::vector<ConfigPrecision> configs;  // in config order, the baseline included
  bool done = false;                     // every config is
  double median_half_width = NAN;        // over the configs with an interval
  double widest_half_width = NAN;        // of the configs not done yet
  int64_t widest_config = -1;
};

// configs as gather_configs returns them; baseline as CompareOptions';
// done_before: the configs done at earlier looks (they run no more rounds,
// and a stricter separation level at this look must not call them back).
PrecisionStatus precision_status(const std::vector<ConfigSamples>& configs, const Json& baseline,
                                 double target, int look,
                                 const std::set<int64_t>& done_before = {});

// The rounds in all a config whose interval is `half_width` (relative, at
// kSequentialLevel) after `rounds` rounds would need for a half-width of at
// most `target`, if its spread stays as it is (the half-width goes as
// t(n - 1) / sqrt(n)); nothing when more than max_rounds would not do.
std::optional<int64_t> rounds_needed(double half_width, int64_t rounds, double target,
                                     int64_t max_rounds);

// "2 of 3 configs within ±1.0% or clearly apart; median ±1.4%; widest open
// ±2.6% (#3)" for progress lines.
std::string precision_summary(const PrecisionStatus& s, double target);

}  // namespace gpusweep::host
