// Quality compared with its uncertainty: is a config's quality no worse
// than the baseline's by more than a margin, as a test says, not two means
// side by side (which called a noisy metric's chance difference a loss).
//
// Each ok repeat gives one evaluation, optionally with its standard error
// (the plugin's `<metric>_se`: the spread of the evaluation's episodes or
// batches). A side's mean is uncertain by whichever of the repeats' spread
// (t with n - 1 degrees of freedom) and the evaluations' own standard errors
// (normal) gives the wider bound:
// repeats that share a seed agree exactly on the CPU, and then only the
// evaluation's sampling is left. The relative difference gets a one-sided
// 95% bound each way (a 90% interval, as a TOST equivalence test reads it);
// non-inferior when the lower bound is above -margin, inferior when the
// upper bound is below it, and inconclusive in between. Sides that ran the
// same repeats are compared by their paired differences, whose spread
// (t, n - 1 df) or evaluation errors (the wider bound) make the interval.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct QualitySample {
  double value = 0;
  double se = NAN;  // the evaluation's standard error; NaN when the plugin gives none
  // The repeat it came from (its seed, with vary_seed); -1 unknown. When both
  // sides ran the same two or more repeats, the change is judged on their
  // paired differences: a seed that trains well for the baseline
  // tends to for the config too, and pairing takes that out of the noise.
  int64_t repeat = -1;
};

enum class QualityVerdict { non_inferior, inferior, inconclusive };
std::string to_string(QualityVerdict v);

struct QualityComparison {
  double change = 0;  // (config - baseline) / |baseline|, signed so that > 0 is better
  double low = NAN;   // one-sided 95% bounds of change; NaN when nothing is known
  double high = NAN;
  QualityVerdict verdict = QualityVerdict::inconclusive;
  std::string note;  // what the interval cannot know, when anything
};

// Nothing when either side has no sample or the baseline's mean is 0.
std::optional<QualityComparison> compare_quality(const std::vector<QualitySample>& baseline,
                                                 const std::vector<QualitySample>& config,
                                                 bool higher_is_better, double margin,
                                                 double alpha = 0.05);

}  // namespace gpusweep::host
