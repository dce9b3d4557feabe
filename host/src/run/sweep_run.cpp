// Recording a run; see sweep_run.hpp.
#include "run/sweep_run.hpp"

#include "model/hashing.hpp"

namespace gpusweep::host {

std::vector<db::TrialPlan> to_rows(const std::vector<PlannedTrial>& plan, const PluginInfo& info) {
  std::vector<db::TrialPlan> rows;
  rows.reserve(plan.size());
  for (const auto& p : plan) {
    db::TrialPlan r;
    r.ordinal = p.ordinal;
    r.config_index = p.config_index;
    r.repeat = p.repeat;
    r.workload = info.manifest.name;
    r.plugin_version = info.manifest.version;
    r.plugin_path = info.file.path;
    r.plugin_hash = info.hash;
    r.abi_version = info.abi;
    r.config_json = canonical_json(p.config);
    r.config_hash = p.config_hash;
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace gpusweep::host
