// The race of `gpusweep tune`; see race.hpp.
#include "analysis/race.hpp"

#include "analysis/precision.hpp"
#include "analysis/significance.hpp"
#include "analysis/time_to_target.hpp"
#include "support/format.hpp"
#include "support/stats.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace gpusweep::host {

namespace {

constexpr double kPi = 3.14159265358979323846;
// A proposal joins when the model predicts it better than the leader by at
// least this (log): configs it predicts as fast as the leader would keep a
// plateau's race going for ever.
constexpr double kProposalGain = 0.005;
// A knob's value no ok trial has had yet is predicted as good as the best
// value of that knob so far, plus this: unknown, so worth a try.
constexpr double kUnseenBonus = 0.03;
// The model's ridge penalties: main effects are shrunk a little,
// interactions (seldom seen together early on) more.
constexpr double kRidgeMain = 0.05;
constexpr double kRidgePair = 0.5;
// Spaces up to this size are scored config by config; larger ones by a
// sample and the neighbours of the best.
constexpr uint64_t kEnumerate = 50000;
constexpr size_t kSample = 20000;

using Outcome = RaceTrial::Outcome;

struct Arm {
  std::vector<const RaceTrial*> trials;  // racing rounds, in round order
  std::vector<const RaceTrial*> confirm;
};

double log_median(const RaceTrial& t) { return std::log(quantile(t.values, 0.5)); }

bool usable(const RaceTrial& t) {
  return t.outcome == Outcome::ok && !t.values.empty() && quantile(t.values, 0.5) > 0;
}

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

RunSamples samples_of(const RaceTrial& t) {
  RunSamples s;
  s.repeat = t.round;
  s.group = t.group;
  s.machine = t.machine;
  s.values = t.values;
  s.cycles = t.cycles;
  return s;
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

// A metric that varies from run to run (and seed to seed): judged by a test.
bool noisy(const Constraint& c) {
  return is_metric(c.name) && c.name != "peak_memory" && c.op != CompareOp::eq &&
         c.op != CompareOp::ne;
}

// Some constraint is relative to the baseline's value of a noisy metric.
bool needs_reference(const RaceOptions& options) {
  for (const auto& k : options.constraints) {
    if (noisy(k) && k.relative_to_baseline) return true;
  }
  return false;
}

// A constraint's standing for a config from its ok trials up to round `last`.
struct ConstraintStanding {
  std::string infeasible;  // why it is shown (or, deterministic, seen) to break one
  bool point_ok = true;    // every estimate meets its constraint (it may lead)
};

// Values of metric `name` by round, over the ok trials up to `last`.
std::map<int64_t, double> metric_by_round(const Arm& arm, const std::string& name, int64_t last) {
  std::map<int64_t, double> out;
  for (const RaceTrial* t : arm.trials) {
    if (t->round > last || t->outcome != Outcome::ok) continue;
    const auto it = t->metrics.find(name);
    if (it != t->metrics.end() && std::isfinite(it->second)) out[t->round] = it->second;
  }
  return out;
}

double median_of(const std::map<int64_t, double>& by_round) {
  std::vector<double> v;
  for (const auto& [r, x] : by_round) v.push_back(x);
  return quantile(v, 0.5);
}

// A constraint's margin: its mean, standard error and degrees of freedom
// (df 0: no test possible yet).
struct Margin {
  double mean = 0, se = 0, df = 0;
  bool paired = false;
};

// A sample's mean and variance (n - 1; 0 for one value).
std::pair<double, double> mean_var(const std::vector<double>& v) {
  const Distribution d = describe(v);
  return {d.mean, d.stddev * d.stddev};
}

Margin absolute_margin(const std::map<int64_t, double>& mine, double threshold) {
  std::vector<double> z;
  for (const auto& [r, x] : mine) z.push_back(x - threshold);
  const auto [mean, var] = mean_var(z);
  const double n = static_cast<double>(z.size());
  return {mean, std::sqrt(var / n), n - 1, false};
}

Margin relative_margin(const std::map<int64_t, double>& mine, const std::map<int64_t, double>& base,
                       double factor) {
  std::vector<double> z, a, b;
  for (const auto& [r, x] : mine) {
    a.push_back(x);
    if (const auto it = base.find(r); it != base.end()) z.push_back(x - factor * it->second);
  }
  for (const auto& [r, y] : base) b.push_back(factor * y);
  if (z.size() == mine.size() && z.size() >= 2) {
    const auto [mean, var] = mean_var(z);
    const double n = static_cast<double>(z.size());
    return {mean, std::sqrt(var / n), n - 1, true};
  }
  const auto [ma, va] = mean_var(a);
  const auto [mb, vb] = mean_var(b);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  Margin m{ma - mb, 0, 0, false};
  if (na < 2 || nb < 2) return m;
  const double qa = va / na, qb = vb / nb;
  m.se = std::sqrt(qa + qb);
  // Welch-Satterthwaite; both spreads nil: as good as exact.
  m.df = qa + qb > 0 ? welch_df({{qa, na - 1}, {qb, nb - 1}}) : na + nb - 2;
  return m;
}

std::string with_value(const Constraint& c, const std::string& what) {
  return c.text + " (" + what + ")";
}

// Judges the constraints for config c at round `last`; noisy ones by a
// one-sided t test at confidence `level` (see race.hpp).
ConstraintStanding judge_constraints(const TuneSpace& space, uint64_t c, const Arm& arm,
                                     const Arm* baseline, bool is_baseline,
                                     const std::vector<Constraint>& constraints, int64_t last,
                                     double level) {
  ConstraintStanding out;
  const Json config = space.config(c);
  for (const Constraint& k : constraints) {
    if (!is_metric(k.name)) {  // a setting: known before anything runs
      if (!satisfies(k, {}, config, {})) {
        out.infeasible = with_value(k, "set to " + config.value(k.name, Json()).dump());
        return out;
      }
      continue;
    }
    if (k.relative_to_baseline && is_baseline) continue;  // meets itself
    const auto mine = metric_by_round(arm, k.name, last);
    if (mine.empty()) continue;  // nothing to judge yet
    std::map<int64_t, double> base;
    if (k.relative_to_baseline) {
      if (baseline == nullptr) continue;
      base = metric_by_round(*baseline, k.name, last);
      if (base.empty()) continue;  // no baseline to be relative to (yet)
    }
    if (!noisy(k)) {
      // Deterministic: the config's median against the threshold.
      std::map<std::string, double> have = {{k.name, median_of(mine)}};
      std::map<std::string, double> against;
      if (k.relative_to_baseline) against[k.name] = median_of(base);
      if (!satisfies(k, have, config, against)) {
        out.infeasible = with_value(k, "it has " + Json(have[k.name]).dump());
        return out;
      }
      continue;
    }
    // The margin (metric - threshold; want >= 0 for > and >=, <= 0 for <
    // and <=) and its standard error: over the config's rounds against a
    // fixed threshold; against the baseline's, paired by round while every
    // round of the config has the baseline's beside it, else unpaired
    // (Welch: the baseline stops running once it is dropped).
    const bool want_above = k.op == CompareOp::gt || k.op == CompareOp::ge;
    const Margin m = k.relative_to_baseline ? relative_margin(mine, base, k.value)
                                            : absolute_margin(mine, k.value);
    const bool point = want_above ? m.mean >= 0 : m.mean <= 0;
    out.point_ok = out.point_ok && point;
    // level 1: a look before the race's tests begin (time to target).
    if (point || !(m.df >= 1) || level >= 1) continue;
    const double t = t_quantile(level, m.df);
    const double bound = want_above ? m.mean + t * m.se : m.mean - t * m.se;
    if (want_above ? bound < 0 : bound > 0) {
      out.infeasible = with_value(k, "shown over " + std::to_string(mine.size()) +
                                         " rounds: margin " + fixed(m.mean, 4) + ", one-sided " +
                                         fixed(100 * level, 2) + "% bound " + fixed(bound, 4) +
                                         (m.paired ? ", paired with the baseline's rounds" : ""));
      return out;
    }
  }
  return out;
}

// Main effects and pairwise interactions of the knobs, by ridge regression
// of the configs' levels on indicator features.
class KnobModel {
 public:
  // failed: the configs that failed (not out of memory): a value that only
  // ever failed, twice or more, is not worth another try.
  KnobModel(const TuneSpace& space, const std::map<uint64_t, double>& levels,
            const std::vector<std::vector<size_t>>& failed)
      : space_(space) {
    for (size_t k = 0; k < space.knobs(); ++k) {
      for (size_t j = 1; j < space.levels(k).size(); ++j) main_.push_back({k, j});
    }
    for (size_t a = 0; a < main_.size(); ++a) {
      for (size_t b = a + 1; b < main_.size(); ++b) {
        if (main_[a].first != main_[b].first) pairs_.push_back({a, b});
      }
    }
    const size_t p = 1 + main_.size() + pairs_.size();
    std::vector<double> xtx(p * p, 0), xty(p, 0);
    for (const auto& [c, y] : levels) {
      const auto f = features(c);
      for (size_t i : f) {
        xty[i] += y;
        for (size_t j : f) xtx[i * p + j] += 1;
      }
    }
    for (size_t i = 1; i < p; ++i) xtx[i * p + i] += i <= main_.size() ? kRidgeMain : kRidgePair;
    beta_ = solve(xtx, xty, p);
    // A level no ok trial has had (it ran out of memory where it was tried,
    // say) is unknown, not bad: it gets the best effect its knob has shown
    // and a bonus, so that it is tried where it may fit; unless it failed
    // twice or more (a library that cannot run it here).
    std::vector<double> best(space.knobs(), 0);
    for (size_t i = 0; i < main_.size(); ++i) {
      if (xtx[(1 + i) * p + (1 + i)] > kRidgeMain) {
        best[main_[i].first] = std::max(best[main_[i].first], beta_[1 + i]);
      }
    }
    for (size_t i = 0; i < main_.size(); ++i) {
      if (xtx[(1 + i) * p + (1 + i)] <= kRidgeMain) {
        size_t failures = 0;
        for (const auto& d : failed) failures += d[main_[i].first] == main_[i].second;
        beta_[1 + i] = failures >= 2 ? -1.0 : best[main_[i].first] + kUnseenBonus;
      }
    }
  }

  double predict(uint64_t c) const {
    double y = 0;
    for (size_t i : features(c)) y += beta_[i];
    return y;
  }

 private:
  // The indices of the features that are 1 for config c (0: the intercept).
  std::vector<size_t> features(uint64_t c) const {
    const auto d = space_.digits(c);
    std::vector<size_t> on = {0};
    std::vector<size_t> mains;
    for (size_t i = 0; i < main_.size(); ++i) {
      if (d[main_[i].first] == main_[i].second) mains.push_back(i);
    }
    for (size_t i : mains) on.push_back(1 + i);
    for (size_t i = 0; i < pairs_.size(); ++i) {
      const auto& [a, b] = pairs_[i];
      if (std::binary_search(mains.begin(), mains.end(), a) &&
          std::binary_search(mains.begin(), mains.end(), b)) {
        on.push_back(1 + main_.size() + i);
      }
    }
    return on;
  }

  // Gaussian elimination with partial pivoting (the ridge makes it regular).
  static std::vector<double> solve(std::vector<double> a, std::vector<double> b, size_t n) {
    for (size_t col = 0; col < n; ++col) {
      size_t pivot = col;
      for (size_t r = col + 1; r < n; ++r) {
        if (std::fabs(a[r * n + col]) > std::fabs(a[pivot * n + col])) pivot = r;
      }
      if (std::fabs(a[pivot * n + col]) < 1e-12) continue;
      if (pivot != col) {
        for (size_t k = 0; k < n; ++k) std::swap(a[col * n + k], a[pivot * n + k]);
        std::swap(b[col], b[pivot]);
      }
      for (size_t r = 0; r < n; ++r) {
        if (r == col) continue;
        const double f = a[r * n + col] / a[col * n + col];
        if (f == 0) continue;
        for (size_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
        b[r] -= f * b[col];
      }
    }
    std::vector<double> x(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (std::fabs(a[i * n + i]) >= 1e-12) x[i] = b[i] / a[i * n + i];
    }
    return x;
  }

  const TuneSpace& space_;
  std::vector<std::pair<size_t, size_t>> main_;   // (knob, level >= 1)
  std::vector<std::pair<size_t, size_t>> pairs_;  // two mains of different knobs
  std::vector<double> beta_;
};

// The configs the model would try next: untried, not ruled out, predicted
// better than the leader's prediction by kProposalGain, best first.
std::vector<uint64_t> propose(const TuneSpace& space, const std::map<uint64_t, double>& levels,
                              const std::vector<std::vector<size_t>>& failed_digits,
                              const std::set<uint64_t>& tried,
                              const std::vector<std::vector<size_t>>& oom_digits,
                              const std::set<std::pair<size_t, size_t>>& avoid, uint64_t leader,
                              size_t count, uint64_t seed, int64_t look) {
  if (count == 0 || levels.empty()) return {};
  const KnobModel model(space, levels, failed_digits);
  // Against the model's own view of the leader: its shrinkage lowers every
  // prediction alike.
  const double leader_level = model.predict(leader);
  std::vector<uint64_t> pool;
  if (space.size() <= kEnumerate) {
    for (uint64_t c = 0; c < space.size(); ++c) pool.push_back(c);
  } else {
    random::SplitMix64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(look));
    for (size_t i = 0; i < kSample; ++i) {
      pool.push_back(static_cast<uint64_t>(
          random::uniform_int(rng, 0, static_cast<int64_t>(space.size() - 1))));
    }
    // And every config one knob away from the tried ones.
    for (uint64_t c : tried) {
      const auto d = space.digits(c);
      for (size_t k = 0; k < d.size(); ++k) {
        for (size_t j = 0; j < space.levels(k).size(); ++j) {
          auto n = d;
          n[k] = j;
          pool.push_back(space.index(n));
        }
      }
    }
    std::sort(pool.begin(), pool.end());
    pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  }
  std::vector<std::pair<double, uint64_t>> scored;
  for (uint64_t c : pool) {
    if (tried.count(c) != 0U || ruled_out_by_memory(space, c, oom_digits)) continue;
    const auto d = space.digits(c);
    bool avoided = false;
    for (size_t k = 0; k < d.size() && !avoided; ++k) avoided = avoid.count({k, d[k]}) != 0U;
    if (avoided) continue;
    const double y = model.predict(c);
    if (y >= leader_level + kProposalGain) scored.push_back({-y, c});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<uint64_t> out;
  for (size_t i = 0; i < scored.size() && out.size() < count; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace

const char* event_name(RaceEventKind k) {
  switch (k) {
    case RaceEventKind::joined:
      return "joined";
    case RaceEventKind::dropped:
      return "dropped";
    case RaceEventKind::infeasible:
      return "infeasible";
    case RaceEventKind::decided:
      return "decided";
    case RaceEventKind::retried:
      return "retried";
  }
  return "?";
}

TrialCosts::TrialCosts(const std::vector<std::pair<uint64_t, double>>& trials) {
  for (const auto& [c, seconds] : trials) {
    spent_ += seconds;
    ++count_;
    auto& s = by_config_[c];
    s.first += seconds;
    ++s.second;
  }
}

double TrialCosts::of(uint64_t config) const {
  const auto it = by_config_.find(config);
  if (it != by_config_.end()) return it->second.first / it->second.second;
  return count_ == 0 ? 0 : spent_ / static_cast<double>(count_);
}

bool TrialCosts::covers(const RaceStatus& st, const RaceOptions& options, double budget_s) const {
  double round = 0, dearest = st.leader ? of(*st.leader) : 0;
  for (uint64_t c : st.next) {
    round += of(c);
    dearest = std::max(dearest, of(c));
  }
  const double confirm = options.confirm_repeats * (of(options.baseline) + 2 * dearest);
  return spent_ + round + confirm <= budget_s;
}

// A value of the memory knob as a number (a batch size).
static double knob_number(const TuneSpace& space, size_t knob, size_t level) {
  const Json& v = space.levels(knob)[level];
  return v.is_number() ? v.get<double>() : static_cast<double>(level);
}

bool ruled_out_by_memory(const TuneSpace& space, uint64_t c,
                         const std::vector<std::vector<size_t>>& oom_digits) {
  const int m = space.memory_knob();
  if (m < 0) return false;
  const auto mk = static_cast<size_t>(m);
  const auto d = space.digits(c);
  for (const auto& o : oom_digits) {
    bool same = true;
    for (size_t k = 0; k < d.size() && same; ++k) {
      same = k == mk ? knob_number(space, k, d[k]) >= knob_number(space, k, o[k]) : d[k] == o[k];
    }
    if (same) return true;
  }
  return false;
}

bool TrialCosts::covers_next(const RaceStatus& st, double budget_s) const {
  double round = 0;
  for (uint64_t c : st.next) round += of(c);
  return spent_ + round <= budget_s;
}

RaceStatus race_within(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                       const RaceOptions& options, const TrialCosts& costs, double budget_s) {
  RaceStatus st = race(space, trials, options);
  const bool racing_over = st.phase == RacePhase::racing && !costs.covers(st, options, budget_s);
  const bool confirming_over = st.phase == RacePhase::confirming &&
                               st.confirm_rounds >= options.confirm_repeats &&
                               !costs.covers_next(st, budget_s);
  if (racing_over || confirming_over) st = race(space, trials, options, /*decide=*/true);
  return st;
}

double race_level(double alpha, int64_t look, size_t tests) {
  const double k = static_cast<double>(std::max<int64_t>(1, look));
  return 1 - alpha * 6 / (kPi * kPi * k * k) / static_cast<double>(std::max<size_t>(1, tests));
}

std::vector<uint64_t> screening_round(const TuneSpace& space, uint64_t baseline, size_t limit) {
  std::vector<uint64_t> out = {baseline};
  const auto base = space.digits(baseline);
  // Round-robin over the knobs, so that a limit keeps every knob's first changes.
  for (size_t j = 0;; ++j) {
    bool any = false;
    for (size_t k = 0; k < space.knobs(); ++k) {
      // The j-th other level of knob k.
      size_t level = j < base[k] ? j : j + 1;
      if (level >= space.levels(k).size()) continue;
      any = true;
      if (out.size() >= limit) return out;
      auto d = base;
      d[k] = level;
      out.push_back(space.index(d));
    }
    if (!any) return out;
  }
}

// The knob values the model should not propose: two or more configs with
// the value break a noisy constraint (shown, or by their estimate now) and
// none with it meets them. A quality loss that comes with fp16, say, is not
// proposed config after config.
std::set<std::pair<size_t, size_t>> constraint_avoid(const TuneSpace& space,
                                                     const std::set<uint64_t>& breakers,
                                                     const std::set<uint64_t>& meeting,
                                                     const std::map<uint64_t, Arm>& arms,
                                                     int64_t last) {
  std::map<std::pair<size_t, size_t>, std::pair<int, int>> count;  // (breaking, meeting)
  for (uint64_t c : breakers) {
    const auto d = space.digits(c);
    for (size_t k = 0; k < d.size(); ++k) ++count[{k, d[k]}].first;
  }
  for (uint64_t c : meeting) {
    const auto it = arms.find(c);
    if (it == arms.end() || runs_of(it->second.trials, last).empty()) continue;
    const auto d = space.digits(c);
    for (size_t k = 0; k < d.size(); ++k) ++count[{k, d[k]}].second;
  }
  std::set<std::pair<size_t, size_t>> out;
  for (const auto& [value, n] : count) {
    if (n.first >= 2 && n.second == 0) out.insert(value);
  }
  return out;
}

// Long by design: the replay reads as the race ran, look after look, then
// the decision and the confirmation, each step with its reason.
RaceStatus race(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                const RaceOptions& options, bool decide) {
  RaceStatus st;
  std::map<uint64_t, Arm> arms;
  std::map<int64_t, std::vector<uint64_t>> rounds;  // racing round -> its configs
  std::map<int64_t, int> confirm_rounds;            // confirmation round -> trials done
  for (const RaceTrial& t : trials) {
    st.tried.insert(t.config);
    if (t.outcome == Outcome::pending) continue;
    if (t.round >= kConfirmRound) {
      arms[t.config].confirm.push_back(&t);
      ++confirm_rounds[t.round];
    } else {
      arms[t.config].trials.push_back(&t);
      rounds[t.round].push_back(t.config);
    }
  }
  for (auto& [c, arm] : arms) {
    std::sort(arm.trials.begin(), arm.trials.end(),
              [](const RaceTrial* a, const RaceTrial* b) { return a->round < b->round; });
  }
  if (rounds.empty()) {
    st.next = screening_round(
        space, options.baseline,
        std::max<size_t>(static_cast<size_t>(options.max_live), 2 * space.knobs() + 1));
    st.next_round = 0;
    for (uint64_t c : st.next) {
      st.events.push_back(
          {0, RaceEventKind::joined, c, "screening: the baseline or one knob changed", {}, {}});
    }
    return st;
  }

  std::set<uint64_t> dropped, infeasible;
  std::vector<std::vector<size_t>> oom_digits, failed_digits;
  std::set<uint64_t> seen;
  std::vector<uint64_t> survivors;
  std::map<uint64_t, double> levels;
  std::optional<uint64_t> leader;
  bool close = false;           // at the last look: the survivors are equivalent to the leader
  std::set<uint64_t> may_lead;  // at the last look: their constraint estimates hold
  std::set<uint64_t> breakers;  // shown to break a noisy constraint, or estimated to (last judged)
  std::set<uint64_t> meeters;   // estimated to meet every constraint (last judged)
  std::optional<uint64_t> provisional;  // at the last look: the best, constraints aside
  int64_t last = -1;
  int64_t time_looks = 0;  // time to target: the looks that spent alpha so far
  for (const auto& [r, configs] : rounds) {
    last = r;
    for (uint64_t c : configs) {
      if (seen.insert(c).second) {
        st.events.push_back(
            {r,
             RaceEventKind::joined,
             c,
             r == 0 ? "screening: the baseline or one knob changed" : "proposed by the model",
             {},
             {}});
      }
    }
    // Out of memory or failed: out of the race; failed transiently: again.
    std::vector<uint64_t> live;
    for (uint64_t c : configs) {
      // Dropped: it runs on only as the reference of a relative constraint.
      if (infeasible.count(c) != 0U || dropped.count(c) != 0U) continue;
      const std::string why = infeasible_reason(arms[c], r);
      if (why.empty()) {
        live.push_back(c);
        for (const RaceTrial* t : arms[c].trials) {
          if (t->round == r && t->outcome == Outcome::transient) {
            st.events.push_back({r,
                                 RaceEventKind::retried,
                                 c,
                                 t->reason + ": it runs again in round " + std::to_string(r + 1),
                                 {},
                                 {}});
          }
        }
        continue;
      }
      infeasible.insert(c);
      st.events.push_back({r, RaceEventKind::infeasible, c, why, {}, {}});
      for (const RaceTrial* t : arms[c].trials) {
        if (t->outcome == Outcome::oom) oom_digits.push_back(space.digits(c));
        if (t->outcome == Outcome::failed) failed_digits.push_back(space.digits(c));
      }
    }
    // Every test of this look, one-sided at `level`: a pair (leader,
    // candidate) for each config that could have been the leader (the true
    // best might have been tested against any of them), and the noisy
    // constraints of the true best.
    size_t contenders = 0;
    for (uint64_t c : live) contenders += runs_of(arms[c].trials, r).size() >= 2;
    size_t noisy_constraints = 0;
    for (const auto& k : options.constraints) noisy_constraints += noisy(k);
    const size_t tests = std::max<size_t>(1, contenders) - 1 + noisy_constraints;
    double level = race_level(options.alpha, std::max<int64_t>(1, r), tests);
    if (options.time_to_target) {
      // A look spends only where a sign test over the r + 1 rounds so far
      // could reject at the next term of the series; elsewhere no test runs
      // (level 1) and the series waits (see race.hpp).
      level = race_level(options.alpha, time_looks + 1, tests);
      if (std::pow(0.5, static_cast<double>(r + 1)) <= 1 - level) {
        ++time_looks;
      } else {
        level = 1;
      }
    }
    // The constraints on the data up to this round.
    may_lead.clear();
    {
      const auto base_it = arms.find(options.baseline);
      const Arm* base = base_it == arms.end() ? nullptr : &base_it->second;
      std::vector<uint64_t> kept;
      for (uint64_t c : live) {
        const ConstraintStanding s = judge_constraints(
            space, c, arms[c], base, c == options.baseline, options.constraints, r, level);
        if (!s.infeasible.empty()) {
          infeasible.insert(c);
          breakers.insert(c);
          meeters.erase(c);
          st.events.push_back({r, RaceEventKind::infeasible, c, s.infeasible, {}, {}});
          continue;
        }
        kept.push_back(c);
        if (s.point_ok) {
          may_lead.insert(c);
          meeters.insert(c);
          breakers.erase(c);
        } else {
          breakers.insert(c);
          meeters.erase(c);
        }
      }
      live = std::move(kept);
    }
    levels = fit_levels(arms, r);
    // The leader: the best level among the live configs with two ok rounds
    // whose constraint estimates hold.
    leader.reset();
    provisional.reset();
    for (uint64_t c : live) {
      if (runs_of(arms[c].trials, r).size() < 2) continue;
      if (!provisional || levels[c] > levels[*provisional]) provisional = c;
      if (may_lead.count(c) == 0U) continue;
      if (!leader || levels[c] > levels[*leader]) leader = c;
    }
    survivors.clear();
    close = false;
    if (!leader) {
      survivors = live;
      continue;
    }
    const auto leader_runs = runs_of(arms[*leader].trials, r);
    std::vector<uint64_t> tested;
    for (uint64_t c : live) {
      if (c != *leader && paired_rounds(leader_runs, runs_of(arms[c].trials, r)) >= 2) {
        tested.push_back(c);
      }
    }
    // A one-sided bound at `level` is a two-sided interval at 2 level - 1.
    const double interval = 2 * level - 1;
    // Every other survivor within +-options.equivalence of the leader, at
    // the same level: the race cannot tell them apart, and need not. Not on
    // time to target (see race.hpp).
    close = tested.size() + 1 == live.size() && !options.time_to_target;
    for (uint64_t c : live) {
      if (std::find(tested.begin(), tested.end(), c) == tested.end()) {
        survivors.push_back(c);
        continue;
      }
      if (options.time_to_target) {
        const auto lt = times_of(arms[*leader].trials, r);
        const auto ct = times_of(arms[c].trials, r);
        const SignTest sign = slower_by_sign(lt, ct);
        if (level < 1 && sign.p <= 1 - level) {
          dropped.insert(c);
          st.events.push_back(
              {r, RaceEventKind::dropped, c,
               "slower to the target than the leader in " + std::to_string(sign.slower) + " of " +
                   std::to_string(sign.pairs) +
                   " paired rounds (censored rounds counted slower only when known to be): "
                   "one-sided sign test p " +
                   fixed(sign.p, 5) + " <= " + fixed(1 - level, 5),
               speed_of(paired_time_ratio(lt, ct)), leader});
        } else {
          survivors.push_back(c);
        }
        continue;
      }
      const auto est = estimate_ratio(leader_runs, runs_of(arms[c].trials, r), interval);
      if (est && est->design == RatioDesign::repeats && est->high < 1) {
        dropped.insert(c);
        st.events.push_back({r, RaceEventKind::dropped, c,
                             fixed(est->ratio, 3) + "x of the leader, below " +
                                 fixed(est->high, 3) + " at " + fixed(100 * level, 2) +
                                 "% (one-sided) over " + std::to_string(est->repeats) +
                                 " paired rounds",
                             est, leader});
      } else {
        survivors.push_back(c);
        // Ending on equivalence drops nobody (the runner-up is confirmed
        // against the winner), so it needs none of the drops' alpha: at the
        // drops' shrinking level two configs 2-3% apart were neither dropped
        // nor shown equivalent for 170 rounds of a 10-minute budget. At the
        // sequential level, as compare's intervals of rounds that stop.
        const auto eq = est ? std::optional<RatioEstimate>(with_level(*est, sequential_level(0.05)))
                            : std::nullopt;
        close = close && eq && eq->design == RatioDesign::repeats &&
                eq->low >= 1 - options.equivalence && eq->high <= 1 + options.equivalence &&
                may_lead.count(c) != 0U;
      }
    }
  }
  st.rounds = last + 1;
  st.leader = leader;
  st.live = survivors;
  for (const auto& [c, y] : levels) st.levels.push_back({c, y});

  // The runner-up: the best level among the other feasible configs with two
  // ok rounds, dropped or not.
  auto runner_up_of = [&](uint64_t winner) -> std::optional<uint64_t> {
    std::optional<uint64_t> best;
    for (const auto& [c, y] : levels) {
      if (c == winner || infeasible.count(c) != 0U || may_lead.count(c) == 0U ||
          runs_of(arms[c].trials, last).size() < 2) {
        continue;
      }
      if (!best || y > levels[*best]) best = c;
    }
    return best;
  };
  auto confirmation_set = [&] {
    std::vector<uint64_t> set = {*st.winner};
    if (st.runner_up) set.push_back(*st.runner_up);
    if (options.baseline != *st.winner && (!st.runner_up || options.baseline != *st.runner_up) &&
        infeasible.count(options.baseline) == 0U) {
      set.push_back(options.baseline);
    }
    return set;
  };

  if (!confirm_rounds.empty() || decide) {
    st.stop = survivors.size() <= 1 && !confirm_rounds.empty()
                  ? "one candidate left, and the model proposes none"
              : close && !confirm_rounds.empty()
                  ? "the " + std::to_string(survivors.size()) + " candidates left are within " +
                        fixed(100 * options.equivalence, 0) + "% of each other"
                  : "the budget ended the race with " + std::to_string(survivors.size()) +
                        " candidates left";
  } else {
    std::vector<uint64_t> proposals;
    if (leader) {
      const size_t room = static_cast<size_t>(std::max(0, options.max_live)) > survivors.size()
                              ? static_cast<size_t>(options.max_live) - survivors.size()
                              : 0;
      proposals = propose(space, levels, failed_digits, st.tried, oom_digits,
                          constraint_avoid(space, breakers, meeters, arms, last), *leader,
                          std::min<size_t>(room, static_cast<size_t>(options.proposals_per_round)),
                          options.seed, last + 1);
    }
    const bool equivalent = close && survivors.size() > 1 && proposals.empty();
    if ((survivors.size() > 1 && !equivalent) || !proposals.empty() || !leader) {
      if (survivors.empty() && proposals.empty()) {
        st.phase = RacePhase::done;
        st.stop = "no config of the space can run here (every candidate failed)";
        return st;
      }
      st.next = survivors;
      st.next.insert(st.next.end(), proposals.begin(), proposals.end());
      // A constraint relative to the baseline's noisy metric needs the
      // baseline measured alongside, round by round, also once it is out of
      // the running: its paired rounds are what the test stands on.
      if (needs_reference(options) && dropped.count(options.baseline) != 0U &&
          infeasible.count(options.baseline) == 0U) {
        st.next.push_back(options.baseline);
      }
      st.next_round = last + 1;
      return st;
    }
    st.stop = equivalent
                  ? "the " + std::to_string(survivors.size()) + " candidates left are within " +
                        fixed(100 * options.equivalence, 0) +
                        "% of each other, and the model proposes none"
                  : "one candidate left, and the model proposes none";
  }
  if (!leader && provisional) {
    // Every candidate left has an estimate beyond a constraint, none shown:
    // the fastest of them, said so.
    leader = provisional;
    st.leader = leader;
    st.stop +=
        "; no candidate's estimates meet every constraint (none is shown to break one): the "
        "winner is the fastest of them";
  }
  if (!leader) {
    st.phase = RacePhase::done;
    st.stop += "; no config ran twice without failing: no winner";
    return st;
  }
  st.winner = leader;
  st.runner_up = runner_up_of(*leader);
  st.events.push_back({last, RaceEventKind::decided, *leader, st.stop, {}, {}});
  // Confirmation: fresh rounds of the winner, the runner-up and the baseline.
  for (const auto& [round, n] : confirm_rounds) st.confirm_rounds += n > 0;
  auto confirm_runs = [&](uint64_t c) { return runs_of(arms[c].confirm, INT64_MAX); };
  // At the sequential level: the confirmation stops when an interval is narrow.
  if (st.confirm_rounds >= 2 && options.time_to_target) {
    // Speeds from the paired time ratios at 95%: the confirmation's rounds
    // are fixed in number, not stopped on a narrow interval.
    const auto winner_times = times_of(arms[*st.winner].confirm, INT64_MAX);
    if (options.baseline != *st.winner) {
      st.vs_baseline = speed_of(
          paired_time_ratio(times_of(arms[options.baseline].confirm, INT64_MAX), winner_times));
    }
    if (st.runner_up) {
      st.vs_runner_up = speed_of(
          paired_time_ratio(times_of(arms[*st.runner_up].confirm, INT64_MAX), winner_times));
    }
  } else if (st.confirm_rounds >= 2) {
    if (options.baseline != *st.winner) {
      st.vs_baseline = estimate_ratio(confirm_runs(options.baseline), confirm_runs(*st.winner),
                                      sequential_level(0.05));
    }
    if (st.runner_up) {
      st.vs_runner_up = estimate_ratio(confirm_runs(*st.runner_up), confirm_runs(*st.winner),
                                       sequential_level(0.05));
    }
  }
  const auto& target = st.vs_baseline ? st.vs_baseline : st.vs_runner_up;
  const bool precise = options.time_to_target || !target ||
                       (target->ratio > 0 && (target->high - target->low) / 2 / target->ratio <=
                                                 options.confirm_precision);
  if (st.confirm_rounds >= options.confirm_repeats &&
      (decide || precise || st.confirm_rounds >= options.max_confirm_rounds)) {
    st.phase = RacePhase::done;
    return st;
  }
  st.phase = RacePhase::confirming;
  st.next = confirmation_set();
  st.next_round = kConfirmRound + st.confirm_rounds;
  return st;
}

}  // namespace gpusweep::host
