// Quality compared with its uncertainty (audit L9): is a config's quality
// no worse than the baseline's by more than a margin, as a test says, not
// two means side by side.
//
// Each ok repeat gives one evaluation, optionally with its standard error
// (the plugin's `<metric>_se`: the spread of the evaluation's episodes or
// batches). A side's mean is uncertain by the larger of the repeats' spread
// (t with n - 1 degrees of freedom) and the evaluations' own standard errors:
// repeats that share a seed agree exactly on the CPU, and then only the
// evaluation's sampling is left. The relative difference gets a one-sided
// 95% bound each way (a 90% interval, as a TOST equivalence test reads it);
// non-inferior when the lower bound is above -margin, inferior when the
// upper bound is below it, and inconclusive in between.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct QualitySample {
  double value = 0;
  double se = NAN;  // the evaluation's standard error; NaN when the plugin gives none
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
