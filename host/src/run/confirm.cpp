// The check `history --confirm` runs; see confirm.hpp.
#include "run/confirm.hpp"

#include "analysis/stored.hpp"
#include "plugin_host/builds.hpp"
#include "support/error.hpp"

#include <algorithm>

namespace gpusweep::host {

namespace {

// The sweep a confirmation runs: the later run's, cut to the series' config.
SweepSpec confirm_spec(const HistoryPoint& after) {
  db::Store store(after.source, db::Connection::Mode::read_only);
  const auto run = store.sweep(after.run_id);
  if (!run)
    throw UsageError("run " + std::to_string(after.run_id) + " is gone from " + after.source);
  SweepSpec spec = stored_spec(*run);
  spec.name = "confirm-" + run->name;
  spec.source = "history --confirm (run " + std::to_string(after.run_id) + ")";
  spec.base = without_build(after.config);
  spec.grid = Json::object();
  spec.baseline = Json::object();
  spec.claims.clear();
  spec.tune.reset();
  spec.check.reset();
  spec.measure.repeats = std::max<int64_t>(spec.measure.repeats, 3);
  validate_check_sweep(spec);
  return spec;
}

// The build a point ran, if its file still holds it.
RunBuild build_of(const Registry& registry, const SweepSpec& spec, const char* role,
                  const HistoryPoint& point) {
  if (point.plugin_path.find(", ") != std::string::npos) {
    throw UsageError("run " + std::to_string(point.run_id) + " ran several builds");
  }
  RunBuild b = resolve_build(registry, spec, role, point.plugin_path);
  if (b.info.hash != point.plugin_hash) {
    throw UsageError(point.plugin_path + " now holds build " + b.info.hash.substr(0, 12) +
                     ", not the build " + point.plugin_hash.substr(0, 12) + " run " +
                     std::to_string(point.run_id) + " ran: keep each build's file to confirm");
  }
  return b;
}

}  // namespace

CheckJob confirm_job(const Registry& registry, const HistoryPoint& before,
                     const HistoryPoint& after, const ConfirmOptions& options) {
  CheckJob job;
  job.spec = confirm_spec(after);
  job.builds.base = build_of(registry, job.spec, kBaseBuild, before);
  job.builds.head = build_of(registry, job.spec, kHeadBuild, after);
  check_build_pair(job.spec, job.builds.base, job.builds.head, before.plugin_path,
                   after.plugin_path);
  job.check.tolerance = options.tolerance;
  job.check.confirm = true;
  job.check.base = build_record(job.builds.base, before.versions.build);
  job.check.head = build_record(job.builds.head, after.versions.build);
  job.budget_s = options.budget_s;
  job.request.db_path = after.source;
  job.request.fork_server = options.fork_server;
  return job;
}

}  // namespace gpusweep::host
