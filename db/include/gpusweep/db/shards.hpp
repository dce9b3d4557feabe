// Sharded runs: importing shard databases (written by `gpusweep run --shard
// i/n`, on other machines or as Slurm array tasks) into one database, and
// recording the runs `gpusweep launch` handed to a scheduler.
#pragma once

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::db {

// What merging one run of a shard database did.
struct MergeResult {
  std::string source;         // the shard database (absolute path)
  std::string sweep;          // the sweep's name
  int64_t into_sweep_id = 0;  // the merged run in the target database
  int64_t shard_index = 1;
  int64_t shard_count = 1;
  int64_t trials = 0;         // the shard's trials
  int64_t imported = 0;       // finished trials this merge copied
  int64_t already = 0;        // finished trials the target had already (an earlier merge)
  int64_t unfinished = 0;     // pending or interrupted in the shard: not imported
  bool run_finished = false;  // every shard merged and every trial of the run finished
};

// Imports the shard database at `shard_path` into `into`, in one
// transaction, idempotently: the shard's trials join the run of the same
// run key (created on the first merge), a finished trial is copied with its
// summary, blocks, metrics, environment and Slurm ids once and never
// overwritten, and a trial the shard has not finished (pending, interrupted)
// stays pending. The shard is read from a consistent snapshot, so a shard
// still being written (or left by a killed task) yields only its committed
// trials. A shard from an older gpusweep is read through a migrated copy;
// the file itself is never written. A database of ordinary runs imports each
// run as a shard 1/1 of its own. One result per run in the shard database.
// Throws DbError naming the file when it cannot be read or is not a
// gpusweep database, and (unless allow_plugin_change) when its finished
// trials ran a plugin build (trials.run_plugin_hash) other than the run's.
std::vector<MergeResult> merge_shard(Store& into, const std::string& shard_path,
                                     bool allow_plugin_change = false);

// The row of a run handed to a scheduler; job_id stays NULL until set.
int64_t record_launch(Store& store, int64_t sweep_id, const std::string& scheduler,
                      const std::string& run_dir, int64_t tasks);
void set_launch_job(Store& store, int64_t launch_id, int64_t job_id);

// Drops a run and everything recorded for it (a launch whose submission failed).
void delete_sweep(Store& store, int64_t sweep_id);

}  // namespace gpusweep::db
