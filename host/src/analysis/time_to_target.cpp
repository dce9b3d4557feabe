// Time to quality compared with censoring; see time_to_target.hpp.
#include "analysis/time_to_target.hpp"

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
  // Kaplan-Meier: the survival falls by d/n at each reached time, the
  // censored leave the risk set after their time.
  std::vector<TargetTime> sorted = times;
  std::sort(sorted.begin(), sorted.end(), [](const TargetTime& a, const TargetTime& b) {
    return a.time_s < b.time_s || (a.time_s == b.time_s && !a.censored && b.censored);
  });
  double survival = 1;
  size_t at_risk = sorted.size();
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    int events = 0;
    while (j < sorted.size() && sorted[j].time_s == sorted[i].time_s) {
      events += sorted[j].censored ? 0 : 1;
      ++j;
    }
    if (events > 0) {
      survival *= 1 - static_cast<double>(events) / static_cast<double>(at_risk);
      if (!s.median && survival <= 0.5 + 1e-12) {
        // Exactly one half: halfway to the next reached time (the usual rule).
        s.median = sorted[i].time_s;
        if (std::fabs(survival - 0.5) < 1e-12) {
          for (size_t k = j; k < sorted.size(); ++k) {
            if (!sorted[k].censored) {
              s.median = (sorted[i].time_s + sorted[k].time_s) / 2;
              break;
            }
          }
        }
      }
    }
    at_risk -= j - i;
    i = j;
  }
  std::vector<double> lower, upper;  // the censored as lower bounds, and as unbounded
  for (const auto& t : times) {
    s.reached += t.censored ? 0 : 1;
    if (t.censored) s.budget = std::max(s.budget, t.time_s);
    lower.push_back(t.time_s);
    upper.push_back(t.censored ? kInf : t.time_s);
  }
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
  r.ratio = std::exp(median_of(point));
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
    // lower bound) lies past it.
    if (!l.censored && (c.censored ? c.time_s >= l.time_s : c.time_s > l.time_s)) ++t.slower;
  }
  t.p = t.slower == 0 ? 1 : 1 - binomial_half_cdf(t.pairs, t.slower - 1);
  return t;
}

}  // namespace gpusweep::host
