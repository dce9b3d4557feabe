// `history --confirm`: each change point's builds, the one before it and the
// one at it, measured again in one check, before the change is called the
// build's.
#include "analysis/stored.hpp"
#include "cli/cli.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <filesystem>

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
  spec.tune = nullptr;
  spec.check = nullptr;
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

int confirm_change_points(const HistoryResult& result, const ConfirmOptions& options,
                          std::ostream& out) {
  std::vector<std::string> lines;
  int confirmed = 0;
  const Registry registry(options.plugin_paths);
  for (size_t i = 0; i < result.series.size(); ++i) {
    const HistorySeries& s = result.series[i];
    for (const ChangePoint& cp : s.change_points) {
      const HistoryPoint& before = s.points[cp.index - 1];
      const HistoryPoint& after = s.points[cp.index];
      std::string line = "series " + std::to_string(i + 1) + ", the change at run " +
                         std::to_string(after.run_id) + " (" + change_words(cp.ratio) + "): ";
      if (before.plugin_hash == after.plugin_hash) {
        lines.push_back(line +
                        "the same build on both sides: an environment change or the "
                        "machine, no builds to re-measure");
        continue;
      }
      try {
        CheckJob job;
        job.spec = confirm_spec(after);
        job.builds.base = build_of(registry, job.spec, kBaseBuild, before);
        job.builds.head = build_of(registry, job.spec, kHeadBuild, after);
        check_build_pair(job.spec, job.builds.base, job.builds.head, before.plugin_path,
                         after.plugin_path);
        job.check = {{"tolerance", options.tolerance},
                     {"confirm", true},
                     {kBaseBuild, build_record(job.builds.base, before.versions.build)},
                     {kHeadBuild, build_record(job.builds.head, after.versions.build)}};
        job.budget_s = options.budget_s;
        job.request.db_path = after.source;
        job.request.fork_server = options.fork_server;
        job.on_report = [&](const CheckRunReport& r) {
          if (r.pairs.empty()) {
            line += "undecided: the check measured nothing";
            return;
          }
          const ChangeConfirmation c = confirm_change(cp.ratio, r.pairs.front());
          line += c.text;
          confirmed += c.call == ConfirmCall::confirmed;
        };
        out << "\nconfirming " << line << "a check of " << before.plugin_path << " against "
            << after.plugin_path << " into " << after.source << "\n";
        if (run_check(std::move(job)) == 130) return -1;
      } catch (const UsageError& e) {
        line += std::string("cannot confirm: ") + e.what();
      }
      lines.push_back(line);
    }
  }
  out << "\nconfirmations (history --confirm):\n";
  if (lines.empty()) out << "  no change points to confirm\n";
  for (const auto& l : lines) out << "  " << l << "\n";
  return confirmed;
}

}  // namespace gpusweep::host
