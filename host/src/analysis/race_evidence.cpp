// The race's evidence, read from the trials (race_internal.hpp): the
// configs' levels, their runs and times to pair, the speeds of time ratios,
// and why a config cannot be the answer from its trials' outcomes.
#include "analysis/race_internal.hpp"

#include "support/descriptive.hpp"

#include <cmath>
#include <map>

namespace gpusweep::host::detail {

namespace {

double log_median(const RaceTrial& t) { return std::log(quantile(t.values, 0.5)); }

bool usable(const RaceTrial& t) {
  return t.outcome == Outcome::ok && !t.values.empty() && quantile(t.values, 0.5) > 0;
}

RunSamples samples_of(const RaceTrial& t) {
  RunSamples s;
  s.repeat = t.round;
  s.group = t.group;
  s.machine = t.machine;
  s.values = t.values;
  s.cycles = t.cycles;
  return s;
}

}  // namespace

// Config levels a[c] and round effects b[r] of log y[c, r] = a[c] + b[r] + e,
// by alternating means over the ok trials of rounds up to `last`.
std::map<uint64_t, double> fit_levels(const std::map<uint64_t, Arm>& arms, int64_t last) {
  struct Obs {
    uint64_t c;
    int64_t r;
    double y;
  };
  std::vector<Obs> obs;
  for (const auto& [c, arm] : arms) {
    for (const RaceTrial* t : arm.trials) {
      if (t->round <= last && usable(*t)) obs.push_back({c, t->round, log_median(*t)});
    }
  }
  std::map<uint64_t, double> a;
  std::map<int64_t, double> b;
  for (int iter = 0; iter < 30; ++iter) {
    std::map<uint64_t, std::pair<double, int>> sa;
    for (const auto& o : obs) {
      auto& s = sa[o.c];
      s.first += o.y - b[o.r];
      ++s.second;
    }
    for (const auto& [c, s] : sa) a[c] = s.first / s.second;
    std::map<int64_t, std::pair<double, int>> sb;
    for (const auto& o : obs) {
      auto& s = sb[o.r];
      s.first += o.y - a[o.c];
      ++s.second;
    }
    double mean = 0;
    for (const auto& [r, s] : sb) mean += s.first / s.second / static_cast<double>(sb.size());
    for (const auto& [r, s] : sb) b[r] = s.first / s.second - mean;
  }
  return a;
}

std::vector<RunSamples> runs_of(const std::vector<const RaceTrial*>& trials, int64_t last) {
  std::vector<RunSamples> out;
  for (const RaceTrial* t : trials) {
    if (t->round <= last && usable(*t)) out.push_back(samples_of(*t));
  }
  return out;
}

// A race on time to target: each usable trial's time (1 / its value) and
// whether it was censored, by round, over the rounds up to `last`.
std::vector<TargetTime> times_of(const std::vector<const RaceTrial*>& trials, int64_t last) {
  std::vector<TargetTime> out;
  for (const RaceTrial* t : trials) {
    if (t->round <= last && usable(*t))
      out.push_back({t->round, 1 / t->values[0], t->censored, false, ""});
  }
  return out;
}

// paired_time_ratio(a, b) (b's time over a's) as b's speed over a's (a's
// time over b's: above 1, b is faster), the interval inverted; a side the
// data cannot bound is 0 or infinite. Nothing without an interval.
std::optional<RatioEstimate> speed_of(const std::optional<TimeRatio>& r) {
  if (!r || !r->interval) return std::nullopt;
  RatioEstimate e;
  e.design = RatioDesign::repeats;
  e.ratio = r->ratio > 0 ? 1 / r->ratio : INFINITY;
  e.low = std::isfinite(r->high) && r->high > 0 ? 1 / r->high : 0;
  e.high = r->low > 0 ? 1 / r->low : INFINITY;
  e.repeats = r->pairs;
  return e;
}

int paired_rounds(const std::vector<RunSamples>& x, const std::vector<RunSamples>& y) {
  int n = 0;
  for (const auto& a : x) {
    for (const auto& b : y) n += a.repeat == b.repeat;
  }
  return n;
}

// Why a config cannot be the answer from its trials' outcomes up to round
// `last` ("" when it can): a deterministic failure on its first trial, a
// transient one when the retry that followed it failed too.
std::string infeasible_reason(const Arm& arm, int64_t last) {
  const RaceTrial* transient = nullptr;  // the last trial, when it failed transiently
  for (const RaceTrial* t : arm.trials) {
    if (t->round > last) continue;
    switch (t->outcome) {
      case Outcome::oom:
        return "out of memory" + (t->reason.empty() ? "" : ": " + t->reason);
      case Outcome::failed:
        return t->reason.empty() ? "failed" : t->reason;
      case Outcome::excluded:
        return t->reason;
      case Outcome::transient:
        if (transient != nullptr) {
          return t->reason + " (a retry of round " + std::to_string(transient->round) + "'s " +
                 transient->reason + ")";
        }
        transient = t;
        break;
      default:
        transient = nullptr;
    }
  }
  return "";
}

}  // namespace gpusweep::host::detail
