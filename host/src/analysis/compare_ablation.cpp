// Each knob's marginal effect against its first value (ablation, see
// compare.hpp's AblationRow): the pairs of configs that differ in it alone,
// and their interval over shared repeats, through the baseline, or their own
// estimates combined.
#include "analysis/compare_internal.hpp"

#include "analysis/precision.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

namespace gpusweep::host {

using detail::find_baseline;

namespace {

// Two configs that differ in one knob alone, as compare pairs them.
struct KnobPair {
  RatioEstimate estimate;                // the pair's own ratio (estimate_ratio)
  std::map<int64_t, double> repeat_log;  // its per-repeat log ratios, by repeat
  // Each side's per-repeat log ratios to the baseline (empty without one),
  // kept once per config by ablation.
  const std::map<int64_t, double>* from_base = nullptr;
  const std::map<int64_t, double>* to_base = nullptr;
};

// The knob's effect through the baseline, for pairs whose configs ran
// different repeats (a precision run goes on with the configs not yet
// precise, so a pair of them shares only the first rounds): each config's
// log ratio to the baseline is the mean over every repeat it ran with it (as
// compare's own ratio), and the effect is the mean over the pairs of to minus
// from. Its variance sums, over the repeats, the square of each repeat's
// contribution to the effect (a sandwich variance with repeats as clusters,
// so whatever the configs of one repeat share, the baseline's own noise
// among it, counts with its sign), each config's deviations scaled by
// sqrt(n / (n - 1)) so that a single config gives its own t interval exactly.
// Degrees of freedom: every side shares the baseline's noise in the repeats
// it ran with it, so the variance gathers in the early repeats most sides
// share; Welch-Satterthwaite over the sides' own variances cannot see that,
// and its df came out too large (95% intervals missed up to 10.5% in
// precision runs and after one failed trial). From
// kSandwichDfRepeats repeats on, the sandwich's own Satterthwaite df; below,
// the fewest repeats - 1. False when a config has fewer than two repeats
// with the baseline.
constexpr double kSandwichDfRepeats = 5;

bool through_baseline(const std::vector<KnobPair>& pairs, double level, AblationRow* row) {
  struct Side {
    const std::map<int64_t, double>* logs;
    double weight;
  };
  std::vector<Side> sides;
  const double g = static_cast<double>(pairs.size());
  for (const auto& p : pairs) {
    sides.push_back({p.from_base, -1 / g});
    sides.push_back({p.to_base, 1 / g});
  }
  std::map<int64_t, double> contribution;  // repeat -> its share of the effect's error
  double effect = 0, min_df = INFINITY;
  for (const auto& side : sides) {
    const double n = static_cast<double>(side.logs->size());
    if (n < 2) return false;
    double mean = 0;
    for (const auto& [r, l] : *side.logs) mean += l / n;
    effect += side.weight * mean;
    const double scale = side.weight / n * std::sqrt(n / (n - 1));
    for (const auto& [r, l] : *side.logs) contribution[r] += scale * (l - mean);
    min_df = std::min(min_df, n - 1);
  }
  double var = 0, fourth = 0;
  for (const auto& [r, c] : contribution) {
    var += c * c;
    fourth += c * c * c * c;
  }
  // From 5 repeats on, the sandwich's own Satterthwaite df (each repeat a
  // cluster: (sum c^2)^2 / sum c^4), which sees where the variance gathers;
  // with fewer it runs too large, and the fewest repeats - 1 holds.
  const double clusters = static_cast<double>(contribution.size());
  const double df = clusters >= kSandwichDfRepeats && fourth > 0
                        ? std::clamp(var * var / fourth, 1.0, clusters - 1)
                        : min_df;
  const double half = var > 0 ? t_quantile(0.5 + level / 2, df) * std::sqrt(var) : 0;
  row->ratio = std::exp(effect);
  row->low = std::exp(effect - half);
  row->high = std::exp(effect + half);
  row->df = df;
  row->note =
      "repeats not shared by every pair: each config's ratio to the baseline over all "
      "its repeats, the pairs' differences averaged";
  return true;
}

// The knob's effect as t over the repeats every pair ran: each repeat's
// effect is the mean of the pairs' log ratios in that repeat. False when
// fewer than two repeats are shared by all pairs, or when some pair ran
// repeats the others did not (a failed trial, or a precision run's rounds
// for the configs not yet precise): leaving those out would throw away the
// data that made those pairs precise, so their own estimates are combined.
bool over_shared_repeats(const std::vector<KnobPair>& pairs, double level, AblationRow* row) {
  std::map<int64_t, double> effect;  // repeat -> sum of the pairs' log ratios
  std::map<int64_t, size_t> seen;
  for (const auto& p : pairs) {
    for (const auto& [r, l] : p.repeat_log) {
      effect[r] += l;
      ++seen[r];
    }
  }
  std::vector<double> shared;
  size_t dropped = 0;
  for (const auto& [r, sum] : effect) {
    if (seen[r] == pairs.size()) {
      shared.push_back(sum / static_cast<double>(pairs.size()));
    } else {
      ++dropped;
    }
  }
  if (shared.size() < 2 || dropped > 0) return false;
  const double n = static_cast<double>(shared.size());
  double mean = 0, ss = 0;
  for (double l : shared) mean += l / n;
  for (double l : shared) ss += (l - mean) * (l - mean);
  const double half = t_quantile(0.5 + level / 2, n - 1) * std::sqrt(ss / (n - 1) / n);
  row->ratio = std::exp(mean);
  row->low = std::exp(mean - half);
  row->high = std::exp(mean + half);
  row->repeats = static_cast<int>(shared.size());
  row->df = n - 1;
  return true;
}

// Repeats that do not pair across the pairs (or one repeat each): the pairs'
// own estimates combined, the mean of their log ratios with the variance of
// a mean of independent estimates and Welch-Satterthwaite degrees of freedom.
void combine_pairs(const std::vector<KnobPair>& pairs, double level, AblationRow* row) {
  const double g = static_cast<double>(pairs.size());
  double mean = 0, var = 0, min_df = INFINITY;
  std::vector<std::pair<double, double>> parts;
  for (const auto& p : pairs) {
    const double v = p.estimate.log_se * p.estimate.log_se / (g * g);
    mean += std::log(p.estimate.ratio) / g;
    var += v;
    parts.push_back({v, p.estimate.df});
    min_df = std::min(min_df, p.estimate.df);
  }
  row->ratio = std::exp(mean);
  const double df = welch_df(parts);
  row->df = std::isfinite(df) ? df : min_df;
  const double half =
      var > 0 && row->df > 0 ? t_quantile(0.5 + level / 2, row->df) * std::sqrt(var) : 0;
  row->low = std::exp(mean - half);
  row->high = std::exp(mean + half);
  if (pairs.size() > 1) {
    row->note = "repeats not shared by every pair: the pairs' own intervals combined";
  }
  std::vector<std::string> notes;
  for (const auto& p : pairs) {
    std::string n = design_note(p.estimate);
    if (p.estimate.design == RatioDesign::repeats || n.empty()) continue;
    if (std::find(notes.begin(), notes.end(), n) != notes.end()) continue;
    notes.push_back(n);
    row->note += (row->note.empty() ? "" : "; ") + n;
  }
}

// One knob's row from its pairs (each `from` against `to` at one combination
// of the other knobs).
AblationRow knob_row(AblationRow row, const std::vector<KnobPair>& pairs, double level) {
  row.pairs = static_cast<int>(pairs.size());
  if (pairs.empty()) return row;
  row.pair_min = INFINITY;
  row.pair_max = -INFINITY;
  bool across = false;
  for (const auto& p : pairs) {
    row.pair_min = std::min(row.pair_min, p.estimate.ratio);
    row.pair_max = std::max(row.pair_max, p.estimate.ratio);
    across = across || p.estimate.across_machines;
  }
  if (!over_shared_repeats(pairs, level, &row) && !through_baseline(pairs, level, &row)) {
    combine_pairs(pairs, level, &row);
  }
  const std::string machines = "some pairs compared across machines";
  if (across && row.note.find("across machines") == std::string::npos) {
    row.note += (row.note.empty() ? "" : "; ") + machines;
  }
  return row;
}

}  // namespace

std::vector<AblationRow> ablation(const std::vector<ConfigSamples>& configs, const Json& grid,
                                  const CompareOptions& options) {
  const double level = interval_level(options);
  const ConfigSamples* base = find_baseline(configs, options);
  // Each config's per-repeat log ratios to the baseline, computed once: a
  // config is in a pair for every value of every knob.
  std::unordered_map<const ConfigSamples*, std::map<int64_t, double>> to_base;
  const auto base_logs = [&](const ConfigSamples* c) -> const std::map<int64_t, double>& {
    auto it = to_base.find(c);
    if (it == to_base.end()) it = to_base.emplace(c, repeat_log_ratios(base->runs, c->runs)).first;
    return it->second;
  };
  std::vector<AblationRow> rows;
  for (const auto& [knob, values] : grid.items()) {
    if (!values.is_array() || values.size() < 2) continue;
    // Configs grouped by every setting but this knob, then by its value: each
    // group holds the configs that differ in this knob alone.
    // Values are matched as JSON values, so that a grid's 20 finds a real
    // parameter's 20.0.
    std::map<std::string, std::vector<std::pair<Json, const ConfigSamples*>>> groups;
    for (const auto& c : configs) {
      if (c.runs.empty() || !c.config.contains(knob)) continue;
      std::string rest;  // every other setting, as the group's key
      for (const auto& [k, v] : c.config.items()) {
        if (k != knob) rest += Json(k).dump() + ':' + v.dump() + ',';
      }
      groups[rest].emplace_back(c.config.at(knob), &c);
    }
    for (size_t vi = 1; vi < values.size(); ++vi) {
      std::vector<KnobPair> pairs;
      for (const auto& [rest, by_value] : groups) {
        auto at = [&by_value = by_value](const Json& v) -> const ConfigSamples* {
          for (const auto& [value, c] : by_value) {
            if (value == v) return c;
          }
          return nullptr;
        };
        const ConfigSamples* a = at(values[0]);
        const ConfigSamples* b = at(values[vi]);
        if (a == nullptr || b == nullptr) continue;
        const auto& x = a->runs;
        const auto& y = b->runs;
        // Each pair as compare estimates it (paired by repeat and cycle).
        std::map<int64_t, double> repeat_log;
        if (auto e = estimate_ratio(x, y, level, &repeat_log)) {
          pairs.push_back({*e, std::move(repeat_log), &base_logs(a), &base_logs(b)});
        }
      }
      AblationRow row;
      row.knob = knob;
      row.from = values[0];
      row.to = values[vi];
      rows.push_back(knob_row(row, pairs, level));
    }
  }
  return rows;
}

}  // namespace gpusweep::host
