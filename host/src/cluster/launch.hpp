// `gpusweep launch --slurm`: a sweep as a Slurm job array. Writes the run
// folder (sweep, batch script), records the run in the database, submits with
// sbatch (rolling the record back when sbatch refuses), and follows the job,
// merging shards as tasks finish.
#pragma once

#include "cluster/run_dir.hpp"
#include "cluster/slurm.hpp"
#include "plugin_host/registry.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <ostream>
#include <string>

namespace gpusweep::host {

struct LaunchRequest {
  std::string db_path;          // where the run is recorded and the shards are merged
  std::string run_dir;          // "" for gpusweep-runs/NAME-TIME
  int64_t trials_per_task = 1;  // raised to fit the array's task limit
  // The script's Slurm options (partition, GPUs, CPUs, time, parallelism,
  // extra #SBATCH lines); the rest is filled in here.
  BatchScript script;
};

struct Launched {
  RunDir dir;
  int64_t job_id = 0;
  int64_t tasks = 0;
  int64_t trials = 0;
  int64_t sweep_id = 0;
  std::string db_path;
};

// Writes the run folder, records the run in store and submits it; notes (a
// raised trials-per-task) go to out. Throws UsageError for a run folder that
// exists or cannot be made, Error when sbatch refuses (nothing recorded).
Launched launch_array(const SweepSpec& spec, const PluginInfo& info, const LaunchRequest& request,
                      db::Store& store, std::ostream& out);

struct LaunchOutcome {
  int failed = 0;          // tasks that did not complete with their shard finished
  std::string failed_ids;  // "2,5"
  int64_t finished = 0;    // trials merged and finished
  int64_t total = 0;
};

// Follows the job until no task is left in the queue, merging each task's
// shard when the task leaves it (progress on out, redrawn on a terminal);
// then merges every shard once more and reports, with the tail of its log,
// each task that did not finish.
LaunchOutcome follow_launch(db::Store& store, const Launched& l, bool tty, std::ostream& out);

// What --wait ends with: the tasks completed and the trials merged, and
// when some are missing, the sbatch line that re-runs the failed tasks.
std::string launch_summary(const Launched& l, const LaunchOutcome& r);

// Throws UsageError naming the flag when an --sbatch-arg is not one sbatch
// option written with '=' on one line, or --partition is not a partition name.
void check_script_options(const BatchScript& script);

// Refuses a run folder (or, without --run-dir, the working directory under
// which the default one goes) that the batch script cannot name: a newline
// would end its #SBATCH block. Called before anything is written.
void check_run_dir(const std::string& run_dir);

}  // namespace gpusweep::host
