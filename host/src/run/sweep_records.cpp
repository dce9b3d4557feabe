// The rows a run is recorded as: its sweeps row and its trials' plans; see
// sweep_run.hpp.
#include "run/sweep_run.hpp"

#include "spec/hashing.hpp"
#include "spec/tune.hpp"

namespace gpusweep::host {

db::SweepRecord sweep_record(const SweepSpec& spec) {
  db::SweepRecord rec;
  rec.name = spec.name;
  rec.workload = spec.workload;
  rec.spec_json = canonical_json(spec.to_json());
  if (spec.check) rec.kind = db::RunKind::check;
  if (is_tune_run(spec)) rec.kind = db::RunKind::tune;
  Json identity = spec.to_json();
  // A check is its sweep, its builds and its tolerances (CheckSpec::identity).
  if (spec.check) identity["check"] = spec.check->identity();
  rec.spec_hash = hash_text(canonical_json(identity));
  return rec;
}

db::TrialPlan trial_row(const PluginInfo& info, int64_t ordinal, int64_t config_index,
                        int64_t repeat, const Json& config) {
  db::TrialPlan r;
  r.ordinal = ordinal;
  r.config_index = config_index;
  r.repeat = repeat;
  r.workload = info.manifest.name;
  r.plugin_version = info.manifest.version;
  r.plugin_path = info.file.path;
  r.plugin_hash = info.hash;
  r.abi_version = info.abi;
  r.config_json = canonical_json(config);
  r.config_hash = config_hash(info.manifest.name, info.manifest.version, config);
  return r;
}

std::vector<db::TrialPlan> to_rows(const std::vector<PlannedTrial>& plan, const PluginInfo& info) {
  std::vector<db::TrialPlan> rows;
  rows.reserve(plan.size());
  for (const auto& p : plan) {
    rows.push_back(trial_row(info, p.ordinal, p.config_index, p.repeat, p.config));
  }
  return rows;
}

}  // namespace gpusweep::host
