// `gpusweep best`: the best config of a sweep under constraints.
#pragma once

#include "analysis/compare.hpp"
#include "analysis/constraints.hpp"
#include "analysis/metric_values.hpp"
#include "spec/objective.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// --objective TEXT (spec/objective.hpp's names); UsageError otherwise.
Objective objective_option(const std::string& text);

struct BestChoice {
  Objective objective = Objective::throughput;
  int configs = 0;      // configs in the sweep
  int ran_ok = 0;       // configs with at least one ok trial
  int eligible = 0;     // configs with ok trials that meet every constraint
  int constraints = 0;  // how many constraints were given
  // The pick (nothing when no config is eligible).
  std::optional<int64_t> config_index;
  Json config;
  std::string unit;            // throughput unit
  std::string secondary_unit;  // the second throughput's (tokens), where a config has one
  ConfigMetrics metrics;       // its figures (throughput and peak memory as compare's)
  ConfigMetrics baseline;      // the baseline's (empty when it has no ok trial)
  std::optional<int64_t> baseline_index;
  std::string baseline_problem;  // the baseline's failure, when it has no ok trial
  // The pick against the baseline, as compare gives it (ratio, interval,
  // verdict, notes); none when the pick is the baseline or it failed.
  std::optional<RatioEstimate> ratio;
  std::optional<Verdict> verdict;
  std::vector<std::string> notes;
  // By throughput or step time: the best config by the objective's value
  // (the leader) and every eligible config tied with it, the leader
  // included, in config order; empty when none is tied. Tied: as compare
  // shows them, a config's ratio against the baseline lies inside the
  // leader's interval (the baseline's ratio is 1), or within compare's
  // min_effect of the leader's; where the baseline failed, their paired
  // ratio shows no difference. The pick is made among them by `rule`.
  std::optional<int64_t> leader;
  std::vector<int64_t> tied;
  std::string rule;
  Json base;  // the sweep's base with the pick's grid values
};

// The best config by objective among those meeting every constraint. A
// config's throughput and peak memory are compare's (config_throughput, the
// largest peak of its repeats); its other metrics (step time, quality, cv,
// input wait) the median over its ok repeats. Constraints relative to the
// baseline use the baseline's figures. By throughput or time, configs tied
// with the leader (BestChoice::tied) are named, and the pick
// among them is the baseline when it is one, else the config changing the
// fewest settings from the baseline, then the smallest peak memory, then the
// leader's order. time_to_target: each config's median time to a
// measure.target (the upper end of its order-statistic bracket,
// analysis/time_to_target.hpp: a config over half of whose trials never
// reached it, diverged ones included, has none and cannot win on it), shown
// as the metric "time_to_target".
BestChoice choose_best(const SweepSpec& spec, const std::vector<db::TrialRecord>& trials,
                       const std::vector<ConfigSamples>& configs, Objective objective,
                       const std::vector<Constraint>& constraints,
                       const CompareOptions& options = {},
                       const std::map<int64_t, double>& time_to_target = {});

// `base` with its paths as the sweep file wrote them: a file the run resolved
// to an absolute path (a Python workload's module) made relative to the sweep
// file's folder again, where the run came from a file.
Json as_written(Json base, const std::optional<std::string>& sweep_file);

// best on a stored run, as `gpusweep best`, the report and serve run it: the
// run's whole trial records in `rounds`, each config's median time to a
// target, and the snippet's paths as the sweep file wrote them.
BestChoice best_of_run(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                       const std::vector<ConfigSamples>& configs, Rounds rounds,
                       Objective objective, const std::vector<Constraint>& constraints = {});

}  // namespace gpusweep::host
