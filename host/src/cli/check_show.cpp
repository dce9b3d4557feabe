// `gpusweep check --show`: a stored check's verdicts again, from its
// database alone (no builds, no sweep file), as the check printed them.
#include "analysis/stored.hpp"
#include "cli/cli.hpp"
#include "cli/run_commands.hpp"
#include "support/error.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

// The run --run names, else the latest check run (of the sweep named, if
// one is): UsageError saying what the database holds otherwise.
db::SweepRecord check_run(db::Store& store, const po::variables_map& vm, const std::string& db) {
  const std::string name = vm.count("sweep") != 0U ? vm["sweep"].as<std::string>() : "";
  std::optional<db::SweepRecord> found;
  if (vm.count("run") != 0U) {
    found = store.sweep(vm["run"].as<int64_t>());
    if (!found)
      throw UsageError("--run: no run " + std::to_string(vm["run"].as<int64_t>()) + " in " + db);
  } else {
    for (const auto& s : store.sweeps()) {
      if (s.kind == db::RunKind::check && (name.empty() || s.name == name) &&
          (!found || s.id > found->id)) {
        found = s;
      }
    }
  }
  if (!found || found->kind != db::RunKind::check) {
    throw UsageError((found ? "run " + std::to_string(found->id) + " is not a check"
                            : "no check run" + (name.empty() ? "" : " of sweep '" + name + "'")) +
                     " in " + db + " (list the runs: gpusweep results --list)");
  }
  return *found;
}

}  // namespace

int show_check(const po::variables_map& vm, CheckFormat format, bool inconclusive_fails) {
  const std::string db = vm["db"].as<std::string>();
  if (!std::filesystem::exists(db)) throw UsageError("no database at '" + db + "'; pass --db");
  db::Store store(db, db::Connection::Mode::read_only);
  const db::SweepRecord run = check_run(store, vm, db);
  const CheckRunReport r =
      check_report(store, run, stored_spec(run), db, run.status == db::SweepStatus::finished,
                   inconclusive_fails);
  for (const auto& file : strings_of(vm, "output")) {
    write_text_file(file, check_view(r, format_for_file(file, format)));
  }
  std::cout << check_view(r, format) << std::flush;
  return r.exit_code;
}

}  // namespace gpusweep::host
