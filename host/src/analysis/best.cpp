// Choosing the best config; see best.hpp.
#include "analysis/best.hpp"

#include "support/descriptive.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>

namespace gpusweep::host {

Objective objective_option(const std::string& text) {
  if (auto o = parse_objective(text)) return *o;
  throw UsageError("--objective " + text + ": use " + objective_names());
}

namespace {

// How many of the grid's settings a config sets differently from the baseline.
int changes_from(const Json& config, const Json& baseline, const Json& grid) {
  int n = 0;
  for (const auto& [k, values] : grid.items()) {
    if (config.value(k, Json()) != baseline.value(k, Json())) ++n;
  }
  return n;
}

// Whether two configs cannot be told apart by throughput: their paired
// ratio shows no change beyond min_effect, or has no interval at all. For a
// run whose baseline failed, where compare has no intervals to show.
bool tied_directly(const ConfigSamples& a, const ConfigSamples& b, const CompareOptions& options) {
  const auto e = estimate_ratio(a.runs, b.runs, interval_level(options));
  if (!e) return true;
  const Verdict v = verdict(*e, options.min_effect);
  return v != Verdict::faster && v != Verdict::slower;
}

// A config against the baseline as compare shows it: its ratio and
// interval (the baseline's own: exactly 1).
struct Versus {
  double ratio = 1, low = 1, high = 1;
};

// Whether b is tied with the leader a by what compare shows: b's ratio
// against the baseline lies inside a's interval (the data cannot tell a's
// true ratio from it; for the baseline, a's interval holds 1, as compare's
// verdict says), or within min_effect of a's ratio. A wide interval of b's
// own does not make it a tie: a noisy config is not as good as a fast one.
bool tied_in_compare(const Versus& a, const Versus& b, double min_effect) {
  return (a.low <= b.ratio && b.ratio <= a.high) ||
         std::fabs(std::log(b.ratio / a.ratio)) <= std::log1p(min_effect);
}

// What choosing reads, config by config: its settings, throughput unit,
// pooled samples and figures (medians, compare's throughput and step
// figures, time to target), and the baseline's settings.
struct Candidates {
  std::map<int64_t, Json> settings;
  std::map<int64_t, std::string> units;
  std::map<int64_t, const ConfigSamples*> samples;
  std::map<int64_t, ConfigMetrics> figures;  // configs with an ok trial
  Json baseline_config;
};

Candidates gather_candidates(const SweepSpec& spec, const std::vector<db::TrialRecord>& trials,
                             const std::vector<ConfigSamples>& configs,
                             const std::map<int64_t, double>& time_to_target, BestChoice& best) {
  Candidates c;
  for (const auto& t : trials) {
    if (c.settings.count(t.plan.config_index) == 0U) {
      c.settings[t.plan.config_index] = Json::parse(t.plan.config_json);
    }
    if (t.summary) c.units[t.plan.config_index] = t.summary->unit;
  }
  best.configs = static_cast<int>(c.settings.size());
  for (const auto& config : configs) c.samples[config.config_index] = &config;
  c.figures = medians_by_config(trials);
  best.ran_ok = static_cast<int>(c.figures.size());
  for (auto& [index, m] : c.figures) {
    const auto s = c.samples.find(index);
    if (s == c.samples.end()) continue;
    const auto rate = config_throughput(*s->second);
    if (rate) m["throughput"] = *rate;
    if (s->second->peak_memory_bytes) m["peak_memory"] = *s->second->peak_memory_bytes;
    // The step in the workload's own terms, as compare shows it.
    const StepFigures step = step_figures(*s->second, rate);
    if (step.secondary_throughput) {
      m["secondary_throughput"] = *step.secondary_throughput;
      best.secondary_unit = s->second->secondary_unit;
    }
    if (step.achieved_flops) m["achieved_flops"] = *step.achieved_flops;
    if (step.mfu) m["mfu"] = *step.mfu;
    if (!s->second->compile_s.empty()) m["compile_s"] = quantile(s->second->compile_s, 0.5);
  }
  for (const auto& [index, t] : time_to_target) {
    if (c.figures.count(index) != 0U) c.figures[index]["time_to_target"] = t;
  }
  for (const auto& [index, config] : c.settings) {
    if (!is_baseline(spec.baseline, index, config)) continue;
    best.baseline_index = index;
    c.baseline_config = config;
    if (c.figures.count(index) != 0U) {
      best.baseline = c.figures.at(index);
    } else if (const auto s = c.samples.find(index); s != c.samples.end()) {
      best.baseline_problem = s->second->problem;
    }
    break;
  }
  return c;
}

// The configs that have the objective's figure and meet every constraint,
// and among them the leader by that figure.
std::vector<int64_t> eligible_configs(const Candidates& c, Objective objective,
                                      const std::vector<Constraint>& constraints,
                                      BestChoice& best) {
  const char* key = objective_name(objective);
  const bool maximise = objective == Objective::throughput;
  std::vector<int64_t> eligible;
  for (const auto& [index, m] : c.figures) {
    bool ok = m.count(key) > 0;
    for (const auto& k : constraints)
      ok = ok && satisfies(k, m, c.settings.at(index), best.baseline);
    if (!ok) continue;
    eligible.push_back(index);
    const double v = m.at(key);
    const double lead = best.leader ? c.figures.at(*best.leader).at(key) : 0;
    if (!best.leader || (maximise ? v > lead : v < lead)) best.leader = index;
  }
  best.eligible = static_cast<int>(eligible.size());
  return eligible;
}

// The configs tied with the leader, as compare's table shows them where it
// can (by rate objectives only), and the pick among them: the baseline,
// else the one changing the fewest settings, then the smallest peak memory.
void break_ties(const SweepSpec& spec, const Candidates& c, Objective objective,
                const std::vector<int64_t>& eligible,
                const std::map<int64_t, const ComparisonRow*>& row_of,
                const CompareOptions& options, BestChoice& best) {
  const auto versus = [&](int64_t index) -> std::optional<Versus> {
    const auto it = row_of.find(index);
    if (it == row_of.end()) return std::nullopt;
    if (it->second->baseline) return Versus{};
    if (!it->second->ratio) return std::nullopt;
    const RatioEstimate& e = *it->second->ratio;
    return Versus{e.ratio, e.low, e.high};
  };
  best.config_index = best.leader;
  const bool by_rate = objective == Objective::throughput || objective == Objective::step_time;
  const auto leader = c.samples.find(*best.leader);
  const auto base = best.baseline_index ? c.samples.find(*best.baseline_index) : c.samples.end();
  const bool compared = base != c.samples.end() && base->second->ok > 0;
  if (by_rate && leader != c.samples.end()) {
    const auto theirs = versus(*best.leader);
    for (const int64_t index : eligible) {
      const auto s = c.samples.find(index);
      const auto mine = versus(index);
      const bool tie =
          index == *best.leader ||
          (compared ? mine && theirs && tied_in_compare(*theirs, *mine, options.min_effect)
                    : s != c.samples.end() && tied_directly(*leader->second, *s->second, options));
      if (tie) best.tied.push_back(index);
    }
  }
  if (best.tied.size() == 1) best.tied.clear();
  if (best.tied.empty()) return;
  const auto order = [&](int64_t index) {
    const auto& m = c.figures.at(index);
    const double memory = m.count("peak_memory") != 0U ? m.at("peak_memory") : 0.0;
    return std::make_tuple(index == best.baseline_index ? 0 : 1,
                           changes_from(c.settings.at(index), c.baseline_config, spec.grid), memory,
                           index == *best.leader ? 0 : 1);
  };
  best.config_index = *std::min_element(best.tied.begin(), best.tied.end(),
                                        [&](int64_t a, int64_t b) { return order(a) < order(b); });
  best.rule = best.config_index == best.baseline_index
                  ? "the baseline is among them: none is surely better than its settings"
                  : "the one changing the fewest settings from the baseline, then the smallest "
                    "peak memory";
}

}  // namespace

BestChoice choose_best(const SweepSpec& spec, const std::vector<db::TrialRecord>& trials,
                       const std::vector<ConfigSamples>& configs, Objective objective,
                       const std::vector<Constraint>& constraints, const CompareOptions& options,
                       const std::map<int64_t, double>& time_to_target) {
  BestChoice best;
  best.objective = objective;
  best.constraints = static_cast<int>(constraints.size());
  const Candidates c = gather_candidates(spec, trials, configs, time_to_target, best);
  const std::vector<int64_t> eligible = eligible_configs(c, objective, constraints, best);
  if (!best.leader) return best;

  // compare's rows: the intervals ties are judged on, and the pick's ratio,
  // verdict and notes, are those compare shows.
  std::vector<ComparisonRow> rows;
  try {
    rows = compare_configs(configs, options);
  } catch (const UsageError&) {
    // A baseline that matches no config: nothing to compare with.
  }
  std::map<int64_t, const ComparisonRow*> row_of;
  for (const auto& r : rows) row_of[r.config->config_index] = &r;
  break_ties(spec, c, objective, eligible, row_of, options, best);

  const int64_t pick = *best.config_index;
  best.config = c.settings.at(pick);
  best.metrics = c.figures.at(pick);
  best.unit = c.units.count(pick) != 0U ? c.units.at(pick) : "";
  if (const auto row = row_of.find(pick); row != row_of.end() && !row->second->baseline) {
    best.ratio = row->second->ratio;
    best.verdict = row->second->verdict;
    best.notes = comparison_notes(*row->second);
  }
  best.base = spec.base;
  for (const auto& [k, values] : spec.grid.items()) best.base[k] = best.config.at(k);
  return best;
}

Json as_written(Json base, const std::optional<std::string>& sweep_file) {
  if (!sweep_file) return base;
  const std::filesystem::path folder = std::filesystem::path(*sweep_file).parent_path();
  for (auto& [key, value] : base.items()) {
    if (!value.is_string()) continue;
    const std::filesystem::path p(value.get<std::string>());
    if (!p.is_absolute() || folder.empty()) continue;
    const std::filesystem::path relative = p.lexically_relative(folder);
    if (!relative.empty() && *relative.begin() != "..") value = relative.string();
  }
  return base;
}

BestChoice best_of_run(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                       const std::vector<ConfigSamples>& configs, Rounds rounds,
                       Objective objective, const std::vector<Constraint>& constraints) {
  // Whole records: the brief ones gather_configs can hand back lack the
  // step time and quality the other figures are medians of.
  std::vector<db::TrialRecord> trials;
  for (auto& t : store.trials(sweep.id)) {
    if (in_rounds(t, rounds)) trials.push_back(std::move(t));
  }
  // Each config's median time to the target, where over half reached it.
  std::map<int64_t, double> times;
  for (const auto& c : configs) {
    if (const auto median = summarise_times(c.target_times).median) times[c.config_index] = *median;
  }
  BestChoice best =
      choose_best(spec, trials, configs, objective, constraints, options_for(spec), times);
  best.base = as_written(best.base, sweep.file_path);
  return best;
}

}  // namespace gpusweep::host
