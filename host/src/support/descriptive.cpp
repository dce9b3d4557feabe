// Descriptive statistics; see descriptive.hpp.
#include "support/descriptive.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace gpusweep::host {

namespace {
double sorted_quantile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

// The values' mean, sample standard deviation (0 for one value) and their
// ratio (0 when the mean is 0), summed in the values' order.
void spread_of(const std::vector<double>& v, double* mean, double* stddev, double* cv) {
  *mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  *stddev = 0;
  if (v.size() > 1) {
    double ss = 0;
    for (double a : v) ss += (a - *mean) * (a - *mean);
    *stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  }
  *cv = *mean != 0 ? *stddev / std::fabs(*mean) : 0;
}

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("quantile of no values");
  // sorted_quantile's two neighbours without sorting: the lo-th smallest by
  // selection, and the next the smallest of what lies above it.
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto nth = values.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(values.begin(), nth, values.end());
  const double a = *nth;
  const double b = lo + 1 < values.size() ? *std::min_element(nth + 1, values.end()) : a;
  return a + (b - a) * (pos - static_cast<double>(lo));
}

Distribution describe(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("describe() of no values");
  std::vector<double> s = values;
  std::sort(s.begin(), s.end());
  Distribution d;
  d.min = s.front();
  d.max = s.back();
  d.median = sorted_quantile(s, 0.5);
  d.q1 = sorted_quantile(s, 0.25);
  d.q3 = sorted_quantile(s, 0.75);
  d.iqr = d.q3 - d.q1;
  spread_of(s, &d.mean, &d.stddev, &d.cv);
  return d;
}

double cv_of(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  double mean = 0, stddev = 0, cv = 0;
  spread_of(values, &mean, &stddev, &cv);
  return cv;
}

}  // namespace gpusweep::host
