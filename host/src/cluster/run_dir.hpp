// A launch's run folder: its layout, its shard databases and its logs, as
// `launch` writes them and `merge` reads them.
#pragma once

#include <gpusweep/db/shards.hpp>
#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace gpusweep::host {

// A launch's run folder, on a file system every node sees:
//   sweep.json     the sweep as it runs (after --set)
//   run.sbatch     the array job's batch script
//   launch.json    the database merged into, the job id, the run key, the task count
//   shards/        shard-I.db, one database per array task
//   logs/          task-I.log, each task's output (appended when requeued)
struct RunDir {
  std::string root;  // absolute

  std::string sweep_file() const { return root + "/sweep.json"; }
  std::string script() const { return root + "/run.sbatch"; }
  std::string info_file() const { return root + "/launch.json"; }
  std::string shard_dir() const { return root + "/shards"; }
  std::string log_dir() const { return root + "/logs"; }
  std::string shard_db(int64_t task) const {
    return shard_dir() + "/shard-" + std::to_string(task) + ".db";
  }
  std::string task_log(int64_t task) const {
    return log_dir() + "/task-" + std::to_string(task) + ".log";
  }
};

// The shard databases in a run folder's shards/, by task number. Throws
// UsageError when `dir` is not a run folder.
std::vector<std::string> shard_files(const std::string& dir);

// One line per merged run: "shard 2/6 of 'name' from FILE: ...".
void print_merge(const db::MergeResult& r, std::ostream& out);

// The last `lines` lines of a text file ("" when it cannot be read).
std::string tail_lines(const std::string& path, size_t lines);

}  // namespace gpusweep::host
