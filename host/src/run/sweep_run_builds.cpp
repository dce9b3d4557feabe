// A check's builds in a run (SweepRun's RunRequest::builds): which plugin
// runs a config, what its worker's config is, and the rows a plan becomes.
#include "run/sweep_run.hpp"

#include "analysis/check.hpp"
#include "support/error.hpp"

namespace gpusweep::host {

const PluginInfo& SweepRun::info_for(const Json& config) const {
  if (request_.builds.empty()) return info_;
  const auto it = config.find(kBuildKey);
  if (it != config.end() && it->is_string()) {
    const auto b = request_.builds.find(it->get<std::string>());
    if (b != request_.builds.end()) return b->second.info;
  }
  throw Error("a config of check '" + spec_.name +
              "' names no build of this check: " + config.dump());
}

Json SweepRun::worker_config(const Json& config) const {
  if (request_.builds.empty()) return config;
  Json c = without_build(config);
  const auto& build = request_.builds.at(config.at(kBuildKey).get<std::string>());
  for (const auto& [key, value] : build.selection.items()) c[key] = value;
  return c;
}

std::vector<db::TrialPlan> SweepRun::rows_of(const std::vector<PlannedTrial>& plan) const {
  std::vector<db::TrialPlan> rows;
  rows.reserve(plan.size());
  for (const auto& p : plan) {
    rows.push_back(trial_row(info_for(p.config), p.ordinal, p.config_index, p.repeat, p.config));
  }
  return rows;
}

std::vector<Json> SweepRun::planned_configs(const std::vector<TrialJob>& jobs) {
  std::vector<Json> configs;
  configs.reserve(jobs.size());
  for (const auto& j : jobs) {
    Json c = Json::parse(j.worker.config_json);
    if (!j.build.empty()) c[kBuildKey] = j.build;
    configs.push_back(std::move(c));
  }
  return configs;
}

}  // namespace gpusweep::host
