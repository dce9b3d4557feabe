// `gpusweep resume`: continue the latest run of a sweep from the database.
#include "analysis/stored.hpp"
#include "cli/cli.hpp"
#include "cli/run_commands.hpp"
#include "run/sweep_run.hpp"
#include "support/error.hpp"

#include <filesystem>

namespace gpusweep::host {

int cmd_resume(const Args& args) {
  po::options_description o;
  o.add_options()("name", po::value<std::string>(), "sweep name (default: the latest sweep)");
  add_db_option(o);
  o.add_options()("jobs,j", po::value<int>()->default_value(1), "worker processes at a time")(
      "fresh-workers", po::bool_switch(),
      "start each trial's worker as a new process that loads the plugin itself, instead of "
      "forking it from a process that loaded the plugin once (the default)");
  add_plugin_path_option(o);
  add_allow_plugin_change_option(o);
  add_gpus_option(o);
  po::positional_options_description pos;
  pos.add("name", 1);
  auto p = parse_command("resume",
                         "[NAME] [--db FILE] [--jobs N] [--gpus LIST] [--fresh-workers]\n"
                         "       [--allow-plugin-change]",
                         "Continues the latest run of a sweep from the database (no sweep file\n"
                         "needed): runs its pending and interrupted trials.",
                         o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
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
  opt.jobs = vm["jobs"].as<int>();
  opt.gpus = gpus_option(vm);
  check_jobs(opt.jobs);
  return run_sweep(spec, info, opt);
}

}  // namespace gpusweep::host
