// Student's t distribution, Welch's interval for the ratio of two samples'
// typical values, and a plain verdict from an interval. compare's intervals
// come from ratio_model.hpp, which pairs samples as the run was designed; a
// rank test over pooled blocks (the Mann-Whitney U test gpusweep used before)
// treats the autocorrelated blocks of one process as independent, and is gone.
#pragma once

#include <cmath>

#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

// A ratio with its interval, as the verdicts read it.
struct RatioInterval {
  double ratio = 1;
  double low = 1;
  double high = 1;
};

// Student's t quantile (inverse CDF) for df degrees of freedom.
double t_quantile(double p, double df);
// Student's t CDF.
double t_cdf(double t, double df);

// Welch-Satterthwaite degrees of freedom of a sum of independent variance
// estimates, each (variance, its degrees of freedom): (sum v)^2 / sum v^2/df,
// the parts with df <= 0 left out of the denominator. NaN when that is 0.
double welch_df(const std::vector<std::pair<double, double>>& parts);

enum class Verdict { faster, slower, no_difference, negligible };

// The smallest change in throughput worth a verdict by default (1%), like
// Criterion's noise threshold: a difference the interval shows but smaller
// than this is called negligible, not faster or slower. Two processes of the
// same config differ by fractions of a percent on a loaded machine (memory
// placement, core assignment), consistently enough over three repeats to
// exclude 1; that is no difference anyone tunes for.
constexpr double kMinEffect = 0.01;

// faster/slower when the interval lies above/below 1 and the ratio moved by
// more than min_effect (either way, on the log scale); negligible when the
// interval excludes 1 but the ratio is within min_effect of it.
template <class Interval>
Verdict verdict(const Interval& ci, double min_effect = 0) {
  if (ci.low <= 1 && ci.high >= 1) return Verdict::no_difference;
  if (std::fabs(std::log(ci.ratio)) <= std::log1p(min_effect)) return Verdict::negligible;
  return ci.low > 1 ? Verdict::faster : Verdict::slower;
}
const char* to_string(Verdict v);

// Positive samples on the log scale: the mean of their logs, its standard
// error, and the 95% t interval of their geometric mean (NaN, NaN and a
// standard error of 0 with fewer than two samples).
struct LogSummary {
  double log_mean = 0;
  double log_se = 0;
  double low = NAN, high = NAN;
};
LogSummary log_summary(const std::vector<double>& samples);

}  // namespace gpusweep::host
