// Comparing two sets of block throughputs: the Mann-Whitney U test (as
// Google Benchmark's compare.py, via scipy) and a confidence interval for
// their ratio, then a plain verdict.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

struct UTest {
  double u = 0;        // U statistic of the first sample
  double p = 1;        // two-sided p-value
  bool exact = false;  // exact distribution (small samples, no ties) or normal approximation
};

// Two-sided Mann-Whitney U test, choosing the method as scipy 1.10's
// mannwhitneyu(method="auto"): exact when either sample has at most 8
// values and there are no ties, else the normal approximation with tie
// correction and continuity correction. Needs at least one value in each.
UTest mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

struct RatioInterval {
  double ratio = 1;  // geometric mean of y over geometric mean of x
  double low = 1;
  double high = 1;
};

// CI of the ratio y/x of typical values: Welch's t interval on log values,
// exponentiated (throughput ratios are multiplicative). level in (0, 1).
// Needs at least two values in each sample.
RatioInterval ratio_interval(const std::vector<double>& x, const std::vector<double>& y,
                             double level = 0.95);

// The same ratio when each sample comes from several runs (repeats): the
// interval is built from the per-run geometric means (paired by round when
// both sides have the same number of runs), so that drift between runs (the
// dominant noise on a shared machine) widens it as it should; it is never
// narrower than the interval over all values. With fewer than two runs on
// either side it is ratio_interval over all values.
RatioInterval ratio_interval_runs(const std::vector<std::vector<double>>& x_runs,
                                  const std::vector<std::vector<double>>& y_runs,
                                  double level = 0.95);

// Student's t quantile (inverse CDF) for df degrees of freedom.
double t_quantile(double p, double df);

enum class Verdict { faster, slower, no_difference };

// faster/slower only when the U test rejects at alpha AND the interval
// excludes 1; otherwise "no significant difference".
Verdict verdict(const UTest& test, const RatioInterval& ci, double alpha = 0.05);
const char* to_string(Verdict v);

// The 95% interval of the geometric mean of positive samples (the t interval
// of their logs); NaN, NaN with fewer than two.
std::pair<double, double> geometric_mean_interval(const std::vector<double>& samples);

}  // namespace gpusweep::host
