// Comparing configs against a baseline; see compare.hpp.
#include "analysis/compare.hpp"

#include "analysis/precision.hpp"
#include "analysis/race.hpp"
#include "model/tune.hpp"
#include "support/error.hpp"
#include "support/stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpusweep::host {

std::string machine_key(const db::EnvironmentInfo& e) {
  return e.hostname + "|" + e.cpu_model + "|" + e.gpus_json;
}

Machines machines_of(const std::vector<db::EnvironmentInfo>& environments) {
  Machines m;
  for (const auto& e : environments) m[e.id] = machine_key(e);
  return m;
}

RunSamples run_of(const db::TrialRecord& t, const Machines& machines) {
  RunSamples run;
  run.repeat = t.plan.repeat;
  run.group = t.interleave_group;
  if (t.environment_id) {
    if (auto it = machines.find(*t.environment_id); it != machines.end()) run.machine = it->second;
  }
  return run;
}

Rounds rounds_for(const SweepSpec& spec, bool selection_data) {
  if (selection_data) return Rounds::all;
  return parse_tune(spec.source, spec.tune).race ? Rounds::confirmation : Rounds::all;
}

bool in_rounds(const db::TrialRecord& t, Rounds rounds) {
  return rounds == Rounds::all || t.plan.repeat >= kConfirmRound;
}

std::vector<ConfigSamples> gather_configs(db::Store& store, int64_t sweep_id, bool with_blocks,
                                          Rounds rounds) {
  std::map<int64_t, ConfigSamples> by_index;
  const Machines machines = with_blocks ? machines_of(store.environments(sweep_id)) : Machines{};
  for (const auto& t : store.trials(sweep_id)) {
    if (!in_rounds(t, rounds)) continue;
    ConfigSamples& c = by_index[t.plan.config_index];
    c.config_index = t.plan.config_index;
    if (c.config.is_null()) c.config = Json::parse(t.plan.config_json);
    ++c.trials;
    if (t.status != db::TrialStatus::ok || !t.summary) {
      if (c.problem.empty() && t.status != db::TrialStatus::pending) {
        c.problem = db::status_name(t.status) + (t.error ? ": " + *t.error : std::string());
      }
      continue;
    }
    ++c.ok;
    c.unit = t.summary->unit;
    if (with_blocks) {
      RunSamples& run = c.runs.emplace_back(run_of(t, machines));
      for (const auto& b : store.blocks(t.id)) {
        if (b.seconds <= 0) continue;
        run.values.push_back(b.samples / b.seconds);
        run.cycles.push_back(b.cycle);
      }
      c.throughput.insert(c.throughput.end(), run.values.begin(), run.values.end());
      c.overlap_fraction =
          std::max(c.overlap_fraction, store.last_stat(t.id, "overlap_fraction").value_or(0));
    }
    if (t.summary->quality) {
      c.quality.push_back({*t.summary->quality, store.last_stat(t.id, "quality_se").value_or(NAN)});
    }
    if (t.summary->peak_memory_bytes) {
      c.peak_memory_bytes =
          std::max(c.peak_memory_bytes.value_or(0), *t.summary->peak_memory_bytes);
    }
    if (t.summary->quality_higher_is_better)
      c.higher_is_better = t.summary->quality_higher_is_better;
  }
  std::vector<ConfigSamples> out;
  for (auto& [idx, c] : by_index) out.push_back(std::move(c));
  return out;
}

std::vector<ComparisonRow> compare_configs(const std::vector<ConfigSamples>& configs,
                                           const CompareOptions& options) {
  const ConfigSamples* base = nullptr;
  int matches_found = 0;
  for (const auto& c : configs) {
    const bool is_base = is_baseline(options.baseline, c.config_index, c.config);
    if (is_base) {
      ++matches_found;
      if (base == nullptr) base = &c;
    }
  }
  if (matches_found == 0) {
    throw UsageError("baseline " + options.baseline.dump() +
                     " matches none of the sweep's configs; use settings that appear in it");
  }
  if (matches_found > 1) {
    throw UsageError("baseline " + options.baseline.dump() + " matches " +
                     std::to_string(matches_found) +
                     " configs; add settings to --baseline to pick one");
  }
  std::vector<ComparisonRow> rows;
  for (const auto& c : configs) {
    ComparisonRow r;
    r.config = &c;
    r.baseline = &c == base;
    if (!r.baseline) {
      const double level = options.sequential ? sequential_level(options.alpha) : 1 - options.alpha;
      r.ratio = estimate_ratio(base->runs, c.runs, level);
      if (r.ratio && r.ratio->across_machines && !options.across_machines) {
        r.withheld =
            "not compared: its trials and the baseline's ran on different machines "
            "(--across-machines to compare them anyway)";
      } else if (r.ratio) {
        r.verdict = verdict(*r.ratio, options.min_effect);
      }
    }
    if (!r.baseline) {
      r.quality = compare_quality(base->quality, c.quality, c.higher_is_better.value_or(true),
                                  options.max_quality_loss, options.alpha);
    }
    rows.push_back(r);
  }
  return rows;
}

std::vector<AblationRow> ablation(const std::vector<ConfigSamples>& configs, const Json& grid) {
  std::vector<AblationRow> rows;
  for (const auto& [knob, values] : grid.items()) {
    if (values.size() < 2) continue;
    // Configs grouped by every setting but this knob, then by its value: each
    // group holds the configs that differ in this knob alone.
    std::map<std::string, std::map<std::string, const ConfigSamples*>> groups;
    for (const auto& c : configs) {
      if (c.throughput.size() < 2 || !c.config.contains(knob)) continue;
      Json rest = c.config;
      rest.erase(knob);
      groups[rest.dump()][c.config.at(knob).dump()] = &c;
    }
    const std::string from_key = values[0].dump();
    for (size_t vi = 1; vi < values.size(); ++vi) {
      AblationRow row{knob, values[0], values[vi]};
      const std::string to_key = values[vi].dump();
      std::vector<double> log_ratios;
      std::optional<RatioEstimate> single;
      for (const auto& [rest, by_value] : groups) {
        auto a = by_value.find(from_key);
        auto b = by_value.find(to_key);
        if (a == by_value.end() || b == by_value.end()) continue;
        // Each pair as compare estimates it (paired by repeat and cycle);
        // with one pair, its interval is the knob's.
        const auto e = estimate_ratio(a->second->runs, b->second->runs);
        if (!e) continue;
        log_ratios.push_back(std::log(e->ratio));
        if (log_ratios.size() == 1) single = e;
      }
      row.pairs = static_cast<int>(log_ratios.size());
      if (row.pairs == 0) {
        rows.push_back(row);
        continue;
      }
      const double n = static_cast<double>(log_ratios.size());
      double mean = 0;
      for (double l : log_ratios) mean += l / n;
      row.ratio = std::exp(mean);
      if (row.pairs == 1) {
        row.low = single->low;
        row.high = single->high;
      } else {
        double ss = 0;
        for (double l : log_ratios) ss += (l - mean) * (l - mean);
        const double se = std::sqrt(ss / (n - 1) / n);
        const double t = t_quantile(0.975, n - 1);
        row.low = std::exp(mean - t * se);
        row.high = std::exp(mean + t * se);
      }
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace gpusweep::host
