// `gpusweep run`: validate a sweep, record its trials, run each in its own
// worker process, commit each result as it finishes (run/sweep_run.hpp).
#include "cli/cli.hpp"
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

po::options_description run_options() {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>()->required(), "sweep file (JSON)");
  add_db_option(o);
  o.add_options()("resume", po::bool_switch(),
                  "continue the latest run of this sweep: run only "
                  "its unfinished trials")("jobs,j", po::value<int>()->default_value(1),
                                           "worker processes at a time")(
      "dry-run", po::bool_switch(), "validate and print the plan; run and write nothing")(
      "fresh-workers", po::bool_switch(),
      "start each trial's worker as a new process that loads the plugin itself, instead of "
      "forking it from a process that loaded the plugin once (the default)")(
      "shard", po::value<std::string>(),
      "i/n: run only shard i of n (1-based) of the planned trials, into its own database "
      "(default --db gpusweep-shard-I-of-N.db); running it again resumes it")(
      "run-key", po::value<std::string>(),
      "with --shard: the key the shards of one run share, so that merge gathers them "
      "(default: the sweep's hash and n)");
  add_set_option(o);
  add_plugin_path_option(o);
  add_allow_plugin_change_option(o);
  add_gpus_option(o);
  return o;
}

}  // namespace

int cmd_run(const Args& args) {
  po::options_description o = run_options();
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "run",
      "SWEEP.json [--db FILE] [--resume] [--jobs N] [--gpus LIST] [--set key=value ...]\n"
      "       [--dry-run] [--shard i/n [--run-key KEY]] [--fresh-workers]",
      "Runs every trial of a sweep file, each in its own worker process, and records the\n"
      "results in the database. The sweep is validated against the workload's manifest\n"
      "before anything runs or is written. The run's header and its results table go to\n"
      "stdout; progress (a line a trial, a line a round) goes to stderr.\n\n"
      "Each trial's process is forked from one that loaded the plugin once (LibTorch's\n"
      "load, about half a second, is paid once per run instead of once per trial);\n"
      "--fresh-workers starts every trial as a new process instead.\n\n"
      "With --shard i/n it runs only every n-th trial of the plan, starting at the i-th,\n"
      "so that n machines (or Slurm array tasks) share a sweep; each shard writes its\n"
      "own database, and `gpusweep merge` gathers the shards into one.\n\n"
      "On a GPU machine, --jobs N > 1 gives each running trial a GPU of its own (from\n"
      "--gpus, default all visible), set before CUDA starts in its process; more jobs than\n"
      "GPUs is refused. On the CPU, trials at once share the cores (see overlap_fraction).\n\n"
      "Exit status: 0 when the run completed, 2 for a usage error (nothing run), 3 when it\n"
      "completed but its baseline or every trial failed (failed, oom, timeout, crashed;\n"
      "skipped trials do not count), 130 when interrupted (resume continues it).\n\n" +
          measure_keys_help(),
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  const int jobs = vm["jobs"].as<int>();
  check_jobs(jobs);

  refuse_check(spec);
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe_sweep(spec);
  validate_sweep(spec, info.manifest);
  const auto plan = plan_trials(spec, info.manifest);
  std::optional<Shard> shard;
  if (vm.count("shard") != 0U) shard = parse_shard(vm["shard"].as<std::string>());
  if (vm.count("run-key") != 0U && !shard) {
    throw UsageError("--run-key names the run a shard belongs to: use it with --shard i/n");
  }
  if (vm["dry-run"].as<bool>()) {
    std::cout << plan_text(spec, info.manifest, plan, shard)
              << "dry run: nothing was run or written\n";
    return 0;
  }
  RunRequest opt;
  opt.db_path = vm["db"].as<std::string>();
  if (shard) {
    if (vm["db"].defaulted()) opt.db_path = default_shard_db(*shard);
    opt.shard = shard;
    opt.run_key = vm.count("run-key") != 0U
                      ? vm["run-key"].as<std::string>()
                      : default_run_key(hash_text(canonical_json(spec.to_json())), shard->count);
    if (opt.run_key.empty()) throw UsageError("--run-key: give a non-empty key");
  }
  opt.resume = vm["resume"].as<bool>();
  opt.allow_plugin_change = vm["allow-plugin-change"].as<bool>();
  opt.fork_server = !vm["fresh-workers"].as<bool>();
  opt.jobs = jobs;
  opt.gpus = gpus_option(vm);
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

}  // namespace gpusweep::host
