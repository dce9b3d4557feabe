// `gpusweep run`: validate a sweep, record its trials, run each in its own
// worker process, commit each result as it finishes (run/sweep_run.hpp).
#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "cli/run_commands.hpp"
#include "plugin_host/registry.hpp"
#include "report/run_view.hpp"
#include "run/sweep_run.hpp"
#include "spec/hashing.hpp"
#include "spec/shard.hpp"
#include "spec/sweep.hpp"
#include "spec/sweep_measure_keys.hpp"
#include "support/error.hpp"

#include <gpusweep/db/store.hpp>

#include <filesystem>
#include <iostream>
#include <optional>

namespace gpusweep::host {

namespace {

std::vector<Option> run_command_options() {
  std::vector<Option> o =
      with_run_options({text("sweep", "SWEEP.json", "sweep file (JSON)").required()},
                       "continue the latest run of this sweep: run only its unfinished trials");
  o.insert(o.end(),
           {integer("jobs", "N", "worker processes at a time", 1).with_short('j'), gpus_option(),
            flag("dry-run", "validate and print the plan; run and write nothing"),
            text("shard", "i/n",
                 "run only shard i of n (1-based) of the planned trials, into its own database "
                 "(default --db gpusweep-shard-I-of-N.db); running it again resumes it"),
            text("run-key", "KEY",
                 "with --shard: the key the shards of one run share, so that merge gathers them "
                 "(default: the sweep's hash and n)"),
            allow_plugin_change_option()});
  return o;
}

int run_run(const po::variables_map& vm) {
  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  RunRequest opt = run_request_of(vm, spec);
  refuse_check(spec);
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe_sweep(spec);
  validate_sweep(spec, info.manifest);
  const auto plan = plan_trials(spec, info.manifest);
  if (vm["dry-run"].as<bool>()) {
    std::cout << plan_text(spec, info.manifest, plan, opt.shard)
              << "dry run: nothing was run or written\n";
    return 0;
  }
  {
    // Refused before the run is recorded: GPUs that cannot be handed out.
    std::vector<Json> configs;
    for (const auto& t : plan) configs.push_back(t.config);
    plan_execution(spec.measure, configs, opt);
  }
  opt.file_path = std::filesystem::absolute(file).string();
  opt.file_hash = hash_file(file);
  return run_sweep(spec, info, opt);
}

}  // namespace

RunRequest run_request_of(const po::variables_map& vm, const SweepSpec& spec) {
  RunRequest opt;
  opt.jobs = int_option(vm, "jobs");
  check_jobs(opt.jobs);
  opt.db_path = vm["db"].as<std::string>();
  if (vm.count("shard") != 0U) {
    const Shard shard = parse_shard(vm["shard"].as<std::string>());
    if (vm["db"].defaulted()) opt.db_path = default_shard_db(shard);
    opt.shard = shard;
    opt.run_key = vm.count("run-key") != 0U
                      ? vm["run-key"].as<std::string>()
                      : default_run_key(hash_text(canonical_json(spec.to_json())), shard.count);
    if (opt.run_key.empty()) throw UsageError("--run-key: give a non-empty key");
  } else if (vm.count("run-key") != 0U) {
    throw UsageError("--run-key names the run a shard belongs to: use it with --shard i/n");
  }
  opt.resume = vm["resume"].as<bool>();
  opt.allow_plugin_change = vm["allow-plugin-change"].as<bool>();
  opt.fork_server = !vm["fresh-workers"].as<bool>();
  opt.gpus = gpus_of(vm);
  return opt;
}

CommandDef cmd_run() {
  return {"run",
          "run a sweep file into the results database",
          "Runs every trial of a sweep file, each in its own worker process (forked from one\n"
          "that loaded the plugin once), and records the results in the database, validated\n"
          "against the workload's manifest before anything runs or is written. The header and\n"
          "results table go to stdout, progress to stderr. Exit status: 0 the run completed,\n"
          "2 usage error (nothing run), 3 it completed but its baseline or every trial failed,\n"
          "130 interrupted (gpusweep resume continues it).",
          "sweep-file.md",
          run_command_options(),
          {"sweep"},
          {},
          run_run,
          measure_keys_help};
}

}  // namespace gpusweep::host
