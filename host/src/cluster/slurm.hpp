// Slurm for `gpusweep launch --slurm`: the array job's batch script, running
// sbatch/squeue/scontrol and reading their output, and the ids a task sees.
// Only the client commands are used (no sacct: it needs slurmdbd).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// The array job and task this process runs in (SLURM_ARRAY_JOB_ID,
// SLURM_ARRAY_TASK_ID; SLURM_JOB_ID alone for a job that is not an array).
struct SlurmIds {
  std::optional<int64_t> job_id;
  std::optional<int64_t> task_id;
};
SlurmIds slurm_ids_from_env();

// Array task ids are 0..MaxArraySize-1 (1001 by default): launch numbers
// tasks 1..N, so at most this many; a bigger sweep puts several trials in
// each task.
constexpr int64_t kMaxArrayTasks = 1000;

// Tasks for `trials` trials at `per_task` trials a task (raised so that the
// tasks fit in kMaxArrayTasks). Returns {tasks, per_task}.
std::pair<int64_t, int64_t> array_shape(int64_t trials, int64_t per_task);

struct BatchScript {
  std::string job_name;
  int64_t tasks = 1;                   // array 1..tasks, task i runs shard i/tasks
  int64_t trials = 0;                  // for the header comment
  std::optional<int64_t> parallelism;  // %N: at most N tasks at once
  std::optional<std::string> partition;
  std::optional<int64_t> gpus_per_task;
  std::optional<int64_t> cpus_per_task;
  // The most ranks a trial of the sweep has (world_size): a task with G GPUs
  // runs G / ranks trials at once, each on ranks of its GPUs.
  int64_t ranks_per_trial = 1;
  std::optional<int64_t> time_min;
  std::vector<std::string> extra;  // more #SBATCH lines, as given
  std::string log_dir;             // task i logs to LOG_DIR/task-i.log (appended on requeue)
  // The task's command: `EXE run SWEEP --shard i/N --run-key KEY --db SHARD_DIR/shard-i.db`.
  std::string exe;
  std::string sweep_file;
  std::string run_key;
  std::string shard_dir;
  std::vector<std::string> plugin_dirs;
};

// The script. Each #SBATCH value is written as one argument the way sbatch
// reads it (tried on Slurm 22.05: outside quotes, whitespace and '#' end an
// argument and a backslash is not special; inside double quotes a backslash
// escapes the next character), so spaces, quotes, backslashes and '#' in an
// option are kept. The log path's '%' is doubled (a literal '%' in Slurm's
// filename patterns, where a backslash has a meaning of its own: a run folder
// with one is refused). What no line can carry (sbatch_line_problem) callers
// refuse first (check_script_options, check_run_dir).
std::string batch_script(const BatchScript& b);

// `arg` escaped as one #SBATCH argument (see batch_script).
std::string sbatch_argument(const std::string& arg);

// `path` with each '%' doubled, for --output and --error.
std::string slurm_filename(const std::string& path);

// Why s cannot stand in an #SBATCH line, if it cannot: a control character
// (newline, CR, tab, ...: the line would end or be misread), or the words
// "packjob" or "hetjob" in any case, which sbatch takes for a heterogeneous
// job's separator wherever they stand on the line, quoted or not.
std::optional<std::string> sbatch_line_problem(const std::string& s);

// A Slurm job name from a sweep name: letters, digits, '-', '_' and '.'.
std::string job_name_for(const std::string& sweep_name);

// The job id in `sbatch --parsable` output ("ID" or "ID;CLUSTER"), or nothing.
std::optional<int64_t> parse_sbatch_job_id(const std::string& out);

// Array task id -> state from `squeue -h -r -j ID -o '%K %T'`.
std::map<int64_t, std::string> parse_squeue_tasks(const std::string& out);

// One array task as `scontrol show job -o ID` reports it.
struct TaskRecord {
  int64_t task_id = 0;
  std::string state;  // COMPLETED, FAILED, TIMEOUT, CANCELLED, PENDING, ...
  std::string reason;
  std::string exit_code;  // "status:signal"
  std::string std_out;    // the task's log file
};

// The records of single tasks; lines for pending ranges ("1-4%2") are skipped.
std::map<int64_t, TaskRecord> parse_scontrol_tasks(const std::string& out);

// A command's exit status and what it printed.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a program found on PATH and waits for it. Throws UsageError naming
// the program when it is not on PATH.
CommandResult run_command(const std::vector<std::string>& argv);

}  // namespace gpusweep::host
