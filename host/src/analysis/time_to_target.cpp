// Time to quality compared with censoring; see time_to_target.hpp.
#include "analysis/time_to_target.hpp"

#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace gpusweep::host {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// P(B <= k) for B ~ Binomial(n, 1/2).
double binomial_half_cdf(int n, int k) {
  double p = 0, term = std::pow(0.5, n);  // C(n, 0) / 2^n
  for (int i = 0; i <= k; ++i) {
    p += term;
    term = term * (n - i) / (i + 1);
  }
  return p;
}

// The k-th smallest (1-based) of values.
double kth(std::vector<double> values, int k) {
  std::nth_element(values.begin(), values.begin() + (k - 1), values.end());
  return values[static_cast<size_t>(k - 1)];
}

// The median of values (the mean of the middle two for an even count).
double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int sign_test_rank(int n, double level) {
  int best = 0;
  for (int k = 1; 2 * k <= n + 1; ++k) {
    if (2 * binomial_half_cdf(n, k - 1) <= 1 - level + 1e-12) best = k;
  }
  return best;
}

TimeSummary summarise_times(const std::vector<TargetTime>& times, double level) {
  TimeSummary s;
  s.n = static_cast<int>(times.size());
  if (times.empty()) return s;
  std::vector<double> lower, upper;  // the censored as lower bounds, and as unbounded
  for (const auto& t : times) {
    const bool never = t.diverged;
    s.reached += t.censored || never ? 0 : 1;
    s.diverged += never ? 1 : 0;
    if (t.censored && !never) s.budget = std::max(s.budget, t.time_s);
    lower.push_back(never ? kInf : t.time_s);
    upper.push_back(t.censored || never ? kInf : t.time_s);
  }
  // The median's bracket: equal ends unless a censored trial is among the
  // middle ones (or past them with over half censored).
  s.median_low = median_of(lower);
  const double high = median_of(upper);
  if (std::isfinite(high)) s.median = high;
  const int k = sign_test_rank(s.n, level);
  if (k > 0) {
    s.interval = true;
    s.low = kth(lower, k);
    s.high = kth(upper, s.n - k + 1);
  }
  if (s.n >= 5 && s.n - s.reached <= 1) {
    std::sort(upper.begin(), upper.end());  // a censored trial (infinite) sorts last
    s.olympic_mean =
        std::accumulate(upper.begin() + 1, upper.end() - 1, 0.0) / static_cast<double>(s.n - 2);
  }
  return s;
}

std::string median_text(const TimeSummary& s) {
  if (s.n == 0) return "-";
  if (s.median) {
    if (*s.median - s.median_low <= 1e-9 * *s.median) return human_seconds(*s.median);
    return human_seconds(s.median_low) + " to " + human_seconds(*s.median);
  }
  if (std::isinf(s.median_low)) {
    return "never (" + std::to_string(s.diverged) + " of " + std::to_string(s.n) + " diverged)";
  }
  return "> " + human_seconds(s.median_low);
}

std::optional<TimeRatio> paired_time_ratio(const std::vector<TargetTime>& baseline,
                                           const std::vector<TargetTime>& config, double level) {
  std::map<int64_t, const TargetTime*> base;
  for (const auto& b : baseline) base[b.repeat] = &b;
  // Each seed's log ratio as an interval [lo, hi]: exact when both reached.
  std::vector<double> lo, hi, point;
  TimeRatio r;
  for (const auto& c : config) {
    auto it = base.find(c.repeat);
    if (it == base.end() || !(c.time_s > 0) || !(it->second->time_s > 0)) continue;
    const TargetTime& b = *it->second;
    ++r.pairs;
    const double x = std::log(c.time_s / b.time_s);
    if (c.diverged || b.diverged) {
      // A side that diverged never reaches the target: against one that
      // reached it the ratio is exactly +-infinity (known); against a
      // censored side, at least 1 in that direction; both diverged: nothing.
      const bool c_never = c.diverged, b_never = b.diverged;
      if (c_never && b_never) {
        lo.push_back(-kInf);
        hi.push_back(kInf);
        point.push_back(0);
      } else if (c_never) {
        lo.push_back(b.censored ? 0.0 : kInf);
        hi.push_back(kInf);
        point.push_back(kInf);
      } else {
        lo.push_back(-kInf);
        hi.push_back(c.censored ? 0.0 : -kInf);
        point.push_back(-kInf);
      }
      if ((c_never && !b_never && !b.censored) || (b_never && !c_never && !c.censored)) ++r.known;
      continue;
    }
    if (!c.censored && !b.censored) {
      ++r.known;
      lo.push_back(x);
      hi.push_back(x);
    } else if (c.censored && !b.censored) {
      lo.push_back(x);  // the config took at least its budget
      hi.push_back(kInf);
    } else if (!c.censored && b.censored) {
      lo.push_back(-kInf);
      hi.push_back(x);  // the baseline took at least its budget
    } else {
      lo.push_back(-kInf);
      hi.push_back(kInf);
    }
    point.push_back(x);  // a bound where censored: the point is then a bound too
  }
  if (r.pairs == 0) return std::nullopt;
  // median_of of two opposite infinities is NaN: no point then.
  const double mid = median_of(point);
  r.ratio = std::isnan(mid) ? 1.0 : std::exp(mid);
  const int k = sign_test_rank(r.pairs, level);
  if (k > 0) {
    r.interval = true;
    r.low = std::exp(kth(lo, k));
    r.high = std::exp(kth(hi, r.pairs - k + 1));
  } else {
    r.note = std::to_string(r.pairs) + " seeds give no interval at this level (the sign test " +
             "needs 6 for 95%)";
  }
  if (r.known < r.pairs) {
    r.note += std::string(r.note.empty() ? "" : "; ") + std::to_string(r.pairs - r.known) + " of " +
              std::to_string(r.pairs) + " seeds censored on a side: bounds only";
  }
  return r;
}

SignTest slower_by_sign(const std::vector<TargetTime>& leader,
                        const std::vector<TargetTime>& candidate) {
  SignTest t;
  std::map<int64_t, const TargetTime*> by_seed;
  for (const auto& l : leader) by_seed[l.repeat] = &l;
  for (const auto& c : candidate) {
    const auto it = by_seed.find(c.repeat);
    if (it == by_seed.end()) continue;
    const TargetTime& l = *it->second;
    ++t.pairs;
    // Known slower: the leader's time is exact, and the candidate's (or its
    // lower bound) lies past it; a candidate that diverged never reaches it.
    if (!l.censored && (c.diverged || (c.censored ? c.time_s >= l.time_s : c.time_s > l.time_s))) {
      ++t.slower;
    }
  }
  t.p = t.slower == 0 ? 1 : 1 - binomial_half_cdf(t.pairs, t.slower - 1);
  return t;
}

}  // namespace gpusweep::host
