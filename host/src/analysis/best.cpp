// Choosing the best config; see best.hpp.
#include "analysis/best.hpp"

#include "support/error.hpp"

#include <map>

namespace gpusweep::host {

Objective parse_objective(const std::string& text) {
  if (text == "throughput") return Objective::throughput;
  if (text == "memory") return Objective::memory;
  if (text == "time") return Objective::time;
  if (text == "time_to_target") return Objective::time_to_target;
  throw UsageError("--objective " + text + ": use throughput, memory, time or time_to_target");
}

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::memory:
      return "memory";
    case Objective::time:
      return "time";
    case Objective::time_to_target:
      return "time_to_target";
    default:
      return "throughput";
  }
}

BestChoice choose_best(const SweepSpec& spec, const std::vector<db::TrialRecord>& trials,
                       Objective objective, const std::vector<Constraint>& constraints,
                       const std::map<int64_t, double>& time_to_target) {
  BestChoice best;
  best.objective = objective;
  std::map<int64_t, Json> configs;
  std::map<int64_t, std::string> units;
  for (const auto& t : trials) {
    if (configs.count(t.plan.config_index) == 0U) {
      configs[t.plan.config_index] = Json::parse(t.plan.config_json);
    }
    if (t.summary) units[t.plan.config_index] = t.summary->unit;
  }
  best.configs = static_cast<int>(configs.size());
  auto medians = medians_by_config(trials);
  for (const auto& [index, t] : time_to_target) {
    if (medians.count(index) != 0U) medians[index]["time_to_target"] = t;
  }
  for (const auto& [index, config] : configs) {
    if (is_baseline(spec.baseline, index, config) && medians.count(index) != 0U) {
      best.baseline = medians.at(index);
    }
  }
  const char* key = objective == Objective::throughput       ? "throughput"
                    : objective == Objective::memory         ? "peak_memory"
                    : objective == Objective::time_to_target ? "time_to_target"
                                                             : "step_time";
  const bool maximise = objective == Objective::throughput;
  for (const auto& [index, m] : medians) {
    const Json& config = configs.at(index);
    bool ok = m.count(key) > 0;
    for (const auto& c : constraints) ok = ok && satisfies(c, m, config, best.baseline);
    if (!ok) continue;
    ++best.eligible;
    const double v = m.at(key);
    const bool better =
        !best.config_index || (maximise ? v > best.metrics.at(key) : v < best.metrics.at(key));
    if (better) {
      best.config_index = index;
      best.config = config;
      best.metrics = m;
      best.unit = units[index];
    }
  }
  if (best.config_index) {
    best.base = spec.base;
    for (const auto& [k, values] : spec.grid.items()) best.base[k] = best.config.at(k);
  }
  return best;
}

}  // namespace gpusweep::host
