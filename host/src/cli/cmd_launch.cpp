// `gpusweep launch --slurm`: a sweep as a Slurm job array (cluster/launch.hpp).
#include "cli/cli.hpp"
#include "cli/requests.hpp"
#include "cluster/launch.hpp"
#include "report/results.hpp"
#include "support/error.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

// Positive integer options, named in the error.
std::optional<int64_t> positive(const po::variables_map& vm, const std::string& flag, int64_t max) {
  if (vm.count(flag) == 0U) return std::nullopt;
  const int64_t v = vm[flag].as<int64_t>();
  if (v < 1 || v > max) {
    throw UsageError("--" + flag + " " + std::to_string(v) + ": use 1 to " + std::to_string(max));
  }
  return v;
}

int run_launch(const po::variables_map& vm) {
  if (!vm["slurm"].as<bool>()) {
    throw UsageError(
        "gpusweep launch: pass --slurm (Slurm is the scheduler gpusweep launches on; "
        "to split a sweep by hand, use gpusweep run --shard i/n)");
  }
  LaunchRequest request = launch_request_of(vm);
  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  apply_overrides(spec, strings_of(vm, "set"));
  const PluginInfo info = Registry(plugin_paths(vm)).describe_sweep(spec);
  validate_sweep(spec, info.manifest);
  request.db_path = std::filesystem::absolute(vm["db"].as<std::string>()).string();
  if (vm.count("run-dir") != 0U) request.run_dir = vm["run-dir"].as<std::string>();
  check_run_dir(request.run_dir);

  db::Store store(request.db_path, db::Connection::Mode::read_write);
  const Launched l = launch_array(spec, info, request, store, std::cout);
  if (!vm["wait"].as<bool>()) {
    std::cout << "follow it with: squeue -j " << l.job_id << "\n"
              << "when it ends:   gpusweep merge " << l.dir.root << "\n";
    return 0;
  }
  const LaunchOutcome r = follow_launch(store, l, stdout_is_terminal(), std::cout);
  const db::SweepRecord sweep = *store.sweep(l.sweep_id);
  std::cout << "\n" << results_table(sweep, read_results(store, sweep));
  std::cout << launch_summary(l, r);
  return r.failed > 0 || r.finished < r.total ? 1 : 0;
}

}  // namespace

// The request's Slurm options from the command line, each checked.
LaunchRequest launch_request_of(const po::variables_map& vm) {
  LaunchRequest request;
  BatchScript& b = request.script;
  b.gpus_per_task = positive(vm, "gpus-per-task", 1024);
  b.cpus_per_task = positive(vm, "cpus-per-task", 100000);
  b.time_min = positive(vm, "time", 525600);
  b.parallelism = positive(vm, "array-parallelism", kMaxArrayTasks);
  request.trials_per_task = *positive(vm, "trials-per-task", 1000000);
  b.extra = strings_of(vm, "sbatch-arg");
  if (vm.count("partition") != 0U) b.partition = vm["partition"].as<std::string>();
  check_script_options(b);
  return request;
}

CommandDef cmd_launch() {
  return {
      "launch",
      "run a sweep as a Slurm job array of shards",
      "Runs a sweep as a Slurm job array: task i of n runs `gpusweep run --shard i/n` into\n"
      "its own shard database in the run folder, so that no SQLite file is written from two\n"
      "nodes; a requeued task resumes its shard. The run and the job id are recorded in\n"
      "--db, where `gpusweep merge RUN_DIR` (or --wait, as tasks finish) gathers the shards.\n"
      "The run folder must be on a file system the nodes share.",
      "cluster.md",
      {text("sweep", "SWEEP.json", "sweep file (JSON)").required(),
       flag("slurm", "submit to Slurm as a job array (required: the only scheduler)"),
       text("partition", "P", "Slurm partition (sbatch --partition)"),
       integer("gpus-per-task", "N", "GPUs for each task (sbatch --gpus-per-task)"),
       integer("cpus-per-task", "N", "CPUs for each task (sbatch --cpus-per-task)"),
       integer("time", "MIN", "time limit of each task in minutes (sbatch --time)"),
       integer("array-parallelism", "N", "at most N tasks at once (sbatch --array=1-T%N)"),
       integer("trials-per-task", "N",
               "trials each task runs (raised to fit the 1000 tasks an array may have)",
               LaunchRequest{}.trials_per_task),
       texts("sbatch-arg", "ARG",
             "another #SBATCH line for the script, e.g. --sbatch-arg=--qos=high"),
       flag("wait", "follow the job: progress, merge shards as tasks finish, report failed tasks"),
       text("run-dir", "DIR",
            "folder for the sweep, the script, shards and logs, on storage every node sees "
            "(default: gpusweep-runs/NAME-TIME)"),
       set_option(), db_option(), plugin_path_option()},
      {"sweep"},
      {"SWEEP.json --slurm [options]"},
      run_launch};
}

}  // namespace gpusweep::host
