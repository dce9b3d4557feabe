// Student's t, the ratio interval and verdicts; see significance.hpp.
#include "analysis/significance.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

namespace gpusweep::host {

namespace {

// Regularised incomplete beta I_x(a, b) by continued fraction (Numerical Recipes).
double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    d = 1 / (std::fabs(d) < tiny ? tiny : d);
    c = 1 + aa / c;
    c = std::fabs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    d = 1 / (std::fabs(d) < tiny ? tiny : d);
    c = 1 + aa / c;
    c = std::fabs(c) < tiny ? tiny : c;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

}  // namespace

double welch_df(const std::vector<std::pair<double, double>>& parts) {
  double sum = 0, denom = 0;
  for (const auto& [v, df] : parts) {
    sum += v;
    if (df > 0) denom += v * v / df;
  }
  return denom > 0 ? sum * sum / denom : NAN;
}

double t_cdf(double t, double df) {
  const double x = df / (df + t * t);
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, x);
  return t >= 0 ? 1 - tail : tail;
}

namespace {

// Standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double lo = 0.02425;
  if (p < lo) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - lo) return -normal_quantile(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double t_pdf(double t, double df) {
  return std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2) - 0.5 * std::log(df * M_PI) -
                  (df + 1) / 2 * std::log1p(t * t / df));
}

}  // namespace

double t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) throw std::invalid_argument("t_quantile domain");
  // Remembered: a comparison of 10,000 configs asks for the same few
  // (level, df) pairs 10,000 times, and each answer is 10 or so t_cdf calls.
  thread_local std::map<std::pair<double, double>, double> known;
  if (const auto it = known.find({p, df}); it != known.end()) return it->second;
  if (known.size() > 4096) known.clear();
  // Newton's method from the normal quantile; bisection keeps it bracketed
  // for the heavy tails of small df.
  double lo = -1e6, hi = 1e6;
  double t = normal_quantile(p);
  for (int i = 0; i < 100; ++i) {
    const double f = t_cdf(t, df) - p;
    if (std::fabs(f) < 1e-14) break;
    (f < 0 ? lo : hi) = t;
    double next = t - f / t_pdf(t, df);
    if (!(next > lo && next < hi)) next = (lo + hi) / 2;
    if (std::fabs(next - t) < 1e-13 * std::max(1.0, std::fabs(t))) {
      t = next;
      break;
    }
    t = next;
  }
  known[{p, df}] = t;
  return t;
}

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::faster:
      return "faster";
    case Verdict::slower:
      return "slower";
    case Verdict::no_difference:
      return "no significant difference";
    case Verdict::negligible:
      return "negligible difference";
  }
  return "?";
}

LogSummary log_summary(const std::vector<double>& samples) {
  LogSummary out;
  const auto n = static_cast<double>(samples.size());
  if (samples.size() < 2) return out;
  double sum = 0;
  for (const double v : samples) sum += std::log(v);
  out.log_mean = sum / n;
  double ss = 0;
  for (const double v : samples) ss += (std::log(v) - out.log_mean) * (std::log(v) - out.log_mean);
  const double se2 = ss / (n - 1) / n;
  out.log_se = std::sqrt(se2);
  if (se2 <= 0) {
    out.low = out.high = std::exp(out.log_mean);
    return out;
  }
  const double t = t_quantile(0.975, n - 1);
  out.low = std::exp(out.log_mean - t * out.log_se);
  out.high = std::exp(out.log_mean + t * out.log_se);
  return out;
}

}  // namespace gpusweep::host
