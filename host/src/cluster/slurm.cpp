// Slurm's client commands and the batch script; see slurm.hpp.
#include "cluster/slurm.hpp"

#include <algorithm>

#include "support/capture.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "support/shell.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace gpusweep::host {

namespace {

std::optional<int64_t> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n < 0) return std::nullopt;
  return static_cast<int64_t>(n);
}

}  // namespace

SlurmIds slurm_ids_from_env() {
  SlurmIds ids;
  ids.job_id = env_int("SLURM_ARRAY_JOB_ID");
  if (ids.job_id) {
    ids.task_id = env_int("SLURM_ARRAY_TASK_ID");
  } else {
    ids.job_id = env_int("SLURM_JOB_ID");
  }
  return ids;
}

std::pair<int64_t, int64_t> array_shape(int64_t trials, int64_t per_task) {
  if (per_task < 1) per_task = 1;
  const int64_t least = (trials + kMaxArrayTasks - 1) / kMaxArrayTasks;
  if (per_task < least) per_task = least;
  const int64_t tasks = std::max<int64_t>(1, (trials + per_task - 1) / per_task);
  return {tasks, per_task};
}

std::string job_name_for(const std::string& sweep_name) {
  std::string out = "gpusweep-";
  for (char c : sweep_name) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  return out.substr(0, 64);
}

std::optional<std::string> sbatch_line_problem(const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "a control character (code " + std::to_string(u) + ")";
  }
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"packjob", "hetjob"}) {
    if (lower.find(word) != std::string::npos) {
      return std::string("the word '") + word +
             "', which sbatch takes for a heterogeneous job's separator";
    }
  }
  return std::nullopt;
}

std::string sbatch_argument(const std::string& arg) {
  if (arg.find_first_of(" \t'\"\\#") == std::string::npos) return arg;
  std::string out = "\"";
  for (char c : arg) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string slurm_filename(const std::string& path) {
  std::string out;
  for (char c : path) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

std::string batch_script(const BatchScript& b) {
  std::ostringstream s;
  const std::string n = std::to_string(b.tasks);
  s << "#!/bin/sh\n"
    << "# Written by `gpusweep launch`: " << b.trials << " trials of a sweep as a Slurm job\n"
    << "# array of " << b.tasks << " tasks. Task i runs shard i/" << n
    << " of the trials into its own database\n"
    << "# (no SQLite file is written from two nodes); a requeued or re-run task resumes\n"
    << "# its shard. Gather the shards with: gpusweep merge RUN_DIR\n"
    << "#SBATCH --job-name=" << b.job_name << "\n"
    << "#SBATCH --array=1-" << n;
  if (b.parallelism) s << "%" << *b.parallelism;
  s << "\n"
    << "#SBATCH " << sbatch_argument("--output=" + slurm_filename(b.log_dir) + "/task-%a.log")
    << "\n"
    << "#SBATCH --open-mode=append\n"
    << "#SBATCH --requeue\n";
  if (b.partition) s << "#SBATCH " << sbatch_argument("--partition=" + *b.partition) << "\n";
  if (b.cpus_per_task) s << "#SBATCH --cpus-per-task=" << *b.cpus_per_task << "\n";
  if (b.gpus_per_task) s << "#SBATCH --gpus-per-task=" << *b.gpus_per_task << "\n";
  if (b.time_min) s << "#SBATCH --time=" << *b.time_min << "\n";
  for (const auto& e : b.extra) s << "#SBATCH " << sbatch_argument(e) << "\n";
  s << "set -e\n"
    << "i=\"${SLURM_ARRAY_TASK_ID:?run this script with sbatch}\"\n"
    << "echo \"gpusweep: task $i of job ${SLURM_ARRAY_JOB_ID} (shard $i/" << n
    << ") on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n"
    << "exec " << shell_quote(b.exe) << " run " << shell_quote(b.sweep_file) << " --shard \"$i/"
    << n << "\" \\\n  --run-key " << shell_quote(b.run_key) << " --db " << shell_quote(b.shard_dir)
    << "\"/shard-$i.db\"";
  for (const auto& d : b.plugin_dirs) s << " --plugin-path " << shell_quote(d);
  // Several GPUs per task: a trial on each at once (on each set of
  // ranks_per_trial of them: a data-parallel trial takes one per rank), each
  // worker given its GPUs of the task's (run --gpus, default all Slurm bound
  // to the task).
  if (b.gpus_per_task) {
    const int64_t jobs = *b.gpus_per_task / std::max<int64_t>(1, b.ranks_per_trial);
    if (jobs > 1) s << " --jobs " << jobs;
  }
  s << "\n";
  return s.str();
}

std::optional<int64_t> parse_sbatch_job_id(const std::string& out) {
  std::string first = out.substr(0, out.find_first_of(";\n"));
  while (!first.empty() && std::isspace(static_cast<unsigned char>(first.back())) != 0) {
    first.pop_back();
  }
  if (!all_digits(first) || first.size() > 18) return std::nullopt;
  return std::stoll(first);
}

std::map<int64_t, std::string> parse_squeue_tasks(const std::string& out) {
  std::map<int64_t, std::string> tasks;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string id, state;
    if (!(words >> id >> state) || !all_digits(id) || id.size() > 18) continue;
    tasks[std::stoll(id)] = state;
  }
  return tasks;
}

std::map<int64_t, TaskRecord> parse_scontrol_tasks(const std::string& out) {
  std::map<int64_t, TaskRecord> tasks;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::map<std::string, std::string> fields;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      const auto eq = w.find('=');
      if (eq != std::string::npos) fields.emplace(w.substr(0, eq), w.substr(eq + 1));
    }
    const auto id = fields.find("ArrayTaskId");
    if (id == fields.end() || !all_digits(id->second) || id->second.size() > 18) continue;
    TaskRecord r;
    r.task_id = std::stoll(id->second);
    r.state = fields["JobState"];
    r.reason = fields["Reason"];
    r.exit_code = fields["ExitCode"];
    r.std_out = fields["StdOut"];
    tasks[r.task_id] = r;
  }
  return tasks;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  const std::string exe = find_on_path(argv.at(0));
  if (exe.empty()) {
    throw UsageError("'" + argv[0] + "' is not on PATH: `gpusweep launch --slurm` needs Slurm's " +
                     "client commands (sbatch, squeue, scontrol); run it on a machine that " +
                     "submits Slurm jobs (a login node)");
  }
  const Captured c = capture(exe, std::vector<std::string>(argv.begin() + 1, argv.end()));
  CommandResult r;
  r.out = c.out;
  r.err = c.err;
  r.exit_code = c.exit_code();
  return r;
}

}  // namespace gpusweep::host
