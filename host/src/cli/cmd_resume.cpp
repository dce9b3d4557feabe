// `gpusweep resume`: continue the latest run of a sweep from the database.
#include "analysis/stored.hpp"
#include "cli/cli.hpp"
#include "cli/run_commands.hpp"
#include "run/sweep_run.hpp"
#include "support/error.hpp"

#include <filesystem>

namespace gpusweep::host {

namespace {

int run_resume(const po::variables_map& vm) {
  const std::string db_path = vm["db"].as<std::string>();
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("no database at '" + db_path + "'; pass --db or run a sweep first");
  }
  SweepSpec spec;
  {
    db::Store store(db_path, db::Connection::Mode::read_write);
    auto sweep = vm.count("name") != 0U ? store.latest_sweep(vm["name"].as<std::string>())
                                        : store.latest_sweep();
    if (!sweep) {
      throw UsageError("no sweep " +
                       (vm.count("name") != 0U ? "named '" + vm["name"].as<std::string>() + "' "
                                               : std::string()) +
                       "in " + db_path);
    }
    spec = stored_spec(*sweep);
  }
  refuse_check(spec);
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe_sweep(spec);
  validate_sweep(spec, info.manifest);
  RunRequest opt;
  opt.db_path = db_path;
  opt.resume = true;
  opt.allow_plugin_change = vm["allow-plugin-change"].as<bool>();
  opt.fork_server = !vm["fresh-workers"].as<bool>();
  opt.jobs = int_option(vm, "jobs");
  opt.gpus = gpus_of(vm);
  check_jobs(opt.jobs);
  return run_sweep(spec, info, opt);
}

}  // namespace

CommandDef cmd_resume() {
  return {
      "resume",
      "continue an interrupted sweep from the database",
      "Continues the latest run of a sweep from the database (no sweep file needed):\n"
      "runs its pending and interrupted trials.",
      "",
      {text("name", "NAME", "sweep name (default: the latest sweep)"), db_option(),
       integer("jobs", "N", "worker processes at a time", 1).with_short('j'),
       fresh_workers_option(), plugin_path_option(), allow_plugin_change_option(), gpus_option()},
      {"name"},
      {},
      run_resume};
}

}  // namespace gpusweep::host
