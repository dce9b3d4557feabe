// The race's constraints (race_internal.hpp): which are noisy, the margin
// of a config's metric against its threshold (or the baseline's), the
// judgement of a config at a look, and the knob values the model should not
// propose because they break one.
#include "analysis/race_internal.hpp"

#include "analysis/significance.hpp"
#include "support/descriptive.hpp"
#include "support/format.hpp"

#include <cmath>
#include <map>

namespace gpusweep::host::detail {

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

namespace {

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

}  // namespace

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

// The knob values the model should not propose: two or more configs with
// the value break a noisy constraint (shown, or by their estimate now) and
// none with it meets them. A quality loss that comes with fp16, say, is not
// proposed config after config.
std::set<std::pair<size_t, size_t>> constraint_avoid(const TuneSpace& space,
                                                     const std::set<uint64_t>& breaking,
                                                     const std::set<uint64_t>& meeting,
                                                     const std::map<uint64_t, Arm>& arms,
                                                     int64_t last) {
  std::map<std::pair<size_t, size_t>, std::pair<int, int>> count;  // (breaking, meeting)
  for (uint64_t c : breaking) {
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

}  // namespace gpusweep::host::detail
