// `gpusweep best`: the best config of a sweep under constraints.
#pragma once

#include "analysis/constraints.hpp"
#include "analysis/metrics.hpp"
#include "model/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

enum class Objective { throughput, memory, time, time_to_target };

// "throughput" | "memory" | "time" | "time_to_target"; throws UsageError
// otherwise.
Objective parse_objective(const std::string& text);
const char* objective_name(Objective o);

struct BestChoice {
  Objective objective = Objective::throughput;
  int configs = 0;   // configs in the sweep
  int eligible = 0;  // configs with ok trials that meet every constraint
  // The winner (nothing when no config is eligible).
  std::optional<int64_t> config_index;
  Json config;
  std::string unit;        // throughput unit
  ConfigMetrics metrics;   // its medians
  ConfigMetrics baseline;  // the baseline's medians (empty when it has no ok trial)
  Json base;               // the sweep's base with the winner's grid values
};

// The best config by objective among those meeting every constraint; each
// metric is the median over a config's ok repeats (analysis/metrics.hpp) and
// constraints relative to the baseline use the baseline's medians.
// time_to_target: each config's median time to a measure.target (the upper
// end of its order-statistic bracket, analysis/time_to_target.hpp: a config
// over half of whose trials never reached it, diverged ones included, has
// none and cannot win on it), shown as the metric "time_to_target".
BestChoice choose_best(const SweepSpec& spec, const std::vector<db::TrialRecord>& trials,
                       Objective objective, const std::vector<Constraint>& constraints,
                       const std::map<int64_t, double>& time_to_target = {});

}  // namespace gpusweep::host
