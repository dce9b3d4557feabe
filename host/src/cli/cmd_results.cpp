// `gpusweep results`: the trials of a sweep as an aligned table.
#include "cli/cli.hpp"
#include "report/output.hpp"
#include "report/results.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <gpusweep/db/store.hpp>

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

// --list: the runs in the database.
std::string sweep_list(db::Store& store, OutputFormat format) {
  std::vector<Json> rows;
  for (const auto& s : store.sweeps()) {
    rows.push_back({{"run", s.id},
                    {"name", s.name},
                    {"workload", s.workload},
                    {"status", db::sweep_status_name(s.status)},
                    {"trials", store.trial_counts(s.id).total},
                    {"created", s.created_at}});
  }
  return render(rows,
                {{"run", "run", true, {}},
                 {"name", "name", false, {}},
                 {"workload", "workload", false, {}},
                 {"status", "status", false, {}},
                 {"trials", "trials", true, {}},
                 {"created", "created", false, {}}},
                format);
}

// --trial ID, or --config N [--repeat R]: those trials whole.
std::string whole_trials(const po::variables_map& vm, const db::SweepRecord& sweep,
                         const std::vector<db::TrialRecord>& trials,
                         const std::vector<db::EnvironmentInfo>& environments) {
  auto environment_of = [&environments](const db::TrialRecord& t) -> const db::EnvironmentInfo* {
    for (const auto& e : environments) {
      if (t.environment_id && e.id == *t.environment_id) return &e;
    }
    return nullptr;
  };
  const int64_t id = vm.count("trial") != 0U ? vm["trial"].as<int64_t>() : -1;
  const int64_t config = vm.count("config") != 0U ? vm["config"].as<int64_t>() - 1 : -1;
  const int64_t repeat = vm.count("repeat") != 0U ? vm["repeat"].as<int64_t>() - 1 : -1;
  std::string out;
  for (const auto& t : trials) {
    const bool match =
        id >= 0 ? t.id == id
                : t.plan.config_index == config && (repeat < 0 || t.plan.repeat == repeat);
    if (match) out += (out.empty() ? "" : "\n") + trial_details(sweep, t, environment_of(t));
  }
  if (!out.empty()) return out;
  const std::string asked =
      id >= 0 ? "--trial " + std::to_string(id)
              : "--config " + std::to_string(config + 1) +
                    (repeat >= 0 ? " --repeat " + std::to_string(repeat + 1) : "");
  const int64_t configs = trials.empty() ? 0 : trials.back().plan.config_index + 1;
  throw UsageError(asked + ": no such trial in sweep '" + sweep.name + "' (run " +
                   std::to_string(sweep.id) + ", configs 1 to " + std::to_string(configs) +
                   "); --sweep NAME picks another run");
}

int run_results(const po::variables_map& vm) {
  const std::string db_path = vm["db"].as<std::string>();
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("no database at '" + db_path + "'; pass --db or run a sweep first");
  }
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  db::Store store(db_path, db::Connection::Mode::read_only);
  if (vm["list"].as<bool>()) {
    std::cout << sweep_list(store, format);
    return 0;
  }
  std::optional<db::SweepRecord> sweep = vm.count("sweep") != 0U
                                             ? store.latest_sweep(vm["sweep"].as<std::string>())
                                             : store.latest_sweep();
  if (!sweep) {
    std::string names;
    for (const auto& s : store.sweeps()) names += (names.empty() ? "" : ", ") + s.name;
    throw UsageError("no sweep " +
                     (vm.count("sweep") != 0U ? "named '" + vm["sweep"].as<std::string>() + "' "
                                              : std::string()) +
                     "in " + db_path + (names.empty() ? "" : " (sweeps: " + names + ")"));
  }
  if (vm.count("trial") + vm.count("config") != 0U) {
    std::cout << whole_trials(vm, *sweep, store.trials(sweep->id), store.environments(sweep->id));
    return 0;
  }
  std::cout << results_table(*sweep, read_results(store, *sweep), format);
  return 0;
}

}  // namespace

CommandDef cmd_results() {
  return {
      "results",
      "print a sweep's trials as a table",
      "Prints the trials of a sweep: the settings that vary, status, throughput (median\n"
      "over blocks) with its coefficient of variation, step time, peak memory, quality and\n"
      "each repeat's ratio to the baseline's same repeat (csv and json add each config's\n"
      "figures as compare gives them). --trial ID or --config N prints trials whole: their\n"
      "error and the tail of their log.",
      "commands.md#reading-results",
      {sweep_name_option(), db_option(), flag("list", "list the sweeps in the database instead"),
       integer("trial", "ID",
               "one trial whole, by its id (a failed trial's note gives it): settings, "
               "status, error and its log's tail"),
       integer("config", "N",
               "every trial of config N whole (numbered from 1, as every table numbers them)"),
       integer("repeat", "R", "with --config: only repeat R (from 1)"),
       format_option(
           {OutputFormat::table, OutputFormat::csv, OutputFormat::json, OutputFormat::md})},
      {"sweep"},
      {},
      run_results};
}

}  // namespace gpusweep::host
