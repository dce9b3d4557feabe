// Launching and following a Slurm job array; see launch.hpp.
#include "cluster/launch.hpp"

#include "spec/gpus.hpp"

#include "run/sweep_run.hpp"
#include "spec/hashing.hpp"
#include "support/error.hpp"
#include "support/spawn.hpp"

#include <gpusweep/db/shards.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

namespace gpusweep::host {

namespace {

namespace fs = std::filesystem;

std::string utc_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

std::string random_hex(int bytes) {
  std::random_device rd;
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < bytes; ++i) {
    const unsigned v = rd() & 0xffU;
    out += digits[v >> 4];
    out += digits[v & 0xfU];
  }
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw Error("cannot write '" + path + "'");
}

void write_info(const Launched& l, const std::string& run_key, const std::string& sweep) {
  nlohmann::json j{{"db", l.db_path},     {"sweep", sweep},   {"run", l.sweep_id},
                   {"run_key", run_key},  {"tasks", l.tasks}, {"trials", l.trials},
                   {"scheduler", "slurm"}};
  if (l.job_id != 0) j["job_id"] = l.job_id;
  write_file(l.dir.info_file(), j.dump(2) + "\n");
}

// The merged run's finished and total trials.
std::pair<int64_t, int64_t> finished_of(db::Store& store, int64_t sweep_id) {
  const auto c = store.trial_counts(sweep_id);
  return {c.finished, c.total};
}

// The run folder, created empty (with shards/ and logs/): run_dir, or
// gpusweep-runs/NAME-TIME. Throws UsageError when it exists and is not empty
// or cannot be made.
RunDir make_run_dir(const std::string& run_dir, const std::string& sweep_name) {
  RunDir dir;
  const std::string root =
      !run_dir.empty() ? run_dir
                       : "gpusweep-runs/" + job_name_for(sweep_name).substr(9) + "-" + utc_stamp();
  dir.root = fs::absolute(root).lexically_normal().string();
  if (!dir.root.empty() && dir.root.back() == '/') dir.root.pop_back();
  std::error_code ec;
  if (fs::exists(dir.root) && !fs::is_empty(dir.root, ec)) {
    throw UsageError("--run-dir '" + dir.root + "' exists and is not empty: give a new folder " +
                     "(a launch never reuses one; `gpusweep merge` reads an old one)");
  }
  fs::create_directories(dir.shard_dir(), ec);
  if (!ec) fs::create_directories(dir.log_dir(), ec);
  if (ec) {
    throw UsageError("--run-dir '" + dir.root + "': cannot create it (" + ec.message() +
                     "); give a folder you can write, on storage the nodes share");
  }
  return dir;
}

// After the job: each task that did not complete with its shard finished,
// with Slurm's state for it and the tail of its log. complete: task -> its
// shard had every trial finished.
LaunchOutcome report_unfinished(const Launched& l, const std::map<int64_t, bool>& complete,
                                std::ostream& out) {
  const auto job = std::to_string(l.job_id);
  const auto info = run_command({"scontrol", "show", "job", "-o", job});
  const auto records = parse_scontrol_tasks(info.exit_code == 0 ? info.out : "");
  LaunchOutcome r;
  for (int64_t task = 1; task <= l.tasks; ++task) {
    const auto it = records.find(task);
    const bool shard_done = complete.count(task) != 0U && complete.at(task);
    std::string state;
    // The script names this log itself; scontrol's StdOut is the same file,
    // but its space-separated output cannot carry a path with a space.
    const std::string log = l.dir.task_log(task);
    if (it != records.end()) {
      const auto& r = it->second;
      if (r.state == "COMPLETED" && r.exit_code == "0:0" && shard_done) continue;
      state = r.state + " (exit code " + r.exit_code +
              (r.reason.empty() || r.reason == "None" ? std::string() : ", " + r.reason) + ")";
    } else {
      if (shard_done) continue;
      state = "unknown (slurmctld no longer lists it)";
    }
    if (!shard_done)
      state += fs::exists(l.dir.shard_db(task)) ? ", its shard has unfinished trials"
                                                : ", no shard database";
    ++r.failed;
    r.failed_ids += (r.failed_ids.empty() ? "" : ",") + std::to_string(task);
    out << "task " << task << " of job " << job << " failed: " << state << "\n";
    const std::string tail = tail_lines(log, 15);
    if (tail.empty()) {
      out << "  (no log at " << log << ")\n";
    } else {
      out << "  last lines of " << log << ":\n";
      std::istringstream lines(tail);
      for (std::string s; std::getline(lines, s);) out << "  | " << s << "\n";
    }
  }
  return r;
}

// The most GPUs a trial of the plan takes at once (its world_size; ranks on
// CPUs take none); UsageError when a task's GPUs are fewer.
int64_t gpu_ranks_per_trial(const std::vector<PlannedTrial>& plan,
                            std::optional<int64_t> gpus_per_task) {
  int64_t ranks = 1;
  for (const auto& t : plan) {
    if (t.config.value("device", std::string("auto")) == "cpu") continue;
    ranks = std::max(ranks, world_size_of(t.config));
  }
  if (gpus_per_task && *gpus_per_task < ranks) {
    throw UsageError("world_size " + std::to_string(ranks) +
                     " needs a GPU per rank in one task, but --gpus-per-task is " +
                     std::to_string(*gpus_per_task) + ": use --gpus-per-task " +
                     std::to_string(ranks) +
                     " or more, or set device to cpu to run the ranks on the task's CPUs "
                     "(--cpus-per-task)");
  }
  return ranks;
}

}  // namespace

Launched launch_array(const SweepSpec& spec, const PluginInfo& info, const LaunchRequest& request,
                      db::Store& store, std::ostream& out) {
  const auto plan = plan_trials(spec, info.manifest);
  const auto [tasks, per_task] =
      array_shape(static_cast<int64_t>(plan.size()), request.trials_per_task);
  if (per_task > request.trials_per_task) {
    out << "note: " << plan.size() << " trials in at most " << kMaxArrayTasks
        << " array tasks: " << per_task << " trials per task\n";
  }
  Launched l;
  l.tasks = tasks;
  l.trials = static_cast<int64_t>(plan.size());
  l.db_path = fs::absolute(request.db_path).string();
  l.dir = make_run_dir(request.run_dir, spec.name);

  // The sweep as the tasks will read it; its hash is what they compute.
  write_file(l.dir.sweep_file(), spec.to_json().dump(2) + "\n");
  const SweepSpec resolved = load_sweep_file(l.dir.sweep_file());
  const std::string run_key = "launch:" + utc_stamp() + "-" + random_hex(8);

  db::SweepRecord rec = sweep_record(resolved);
  rec.file_path = l.dir.sweep_file();
  rec.file_hash = hash_file(l.dir.sweep_file());
  rec.run_key = run_key;
  rec.shard_count = tasks;
  l.sweep_id = store.create_sweep(rec, to_rows(plan_trials(resolved, info.manifest), info));
  const int64_t launch_id = db::record_launch(store, l.sweep_id, "slurm", l.dir.root, tasks);

  BatchScript b = request.script;
  b.ranks_per_trial = gpu_ranks_per_trial(plan, b.gpus_per_task);
  b.job_name = job_name_for(resolved.name);
  b.tasks = tasks;
  b.trials = l.trials;
  b.log_dir = l.dir.log_dir();
  b.exe = self_executable();
  b.sweep_file = l.dir.sweep_file();
  b.run_key = run_key;
  b.shard_dir = l.dir.shard_dir();
  b.plugin_dirs = {fs::path(info.file.path).parent_path().string()};
  write_file(l.dir.script(), batch_script(b));
  std::error_code ec;  // not executable: sbatch reads it all the same
  fs::permissions(l.dir.script(), fs::perms::owner_exec | fs::perms::group_exec,
                  fs::perm_options::add, ec);
  write_info(l, run_key, resolved.name);

  CommandResult sub;
  try {
    sub = run_command({"sbatch", "--parsable", l.dir.script()});
  } catch (...) {
    db::delete_sweep(store, l.sweep_id);
    throw;
  }
  const auto job = parse_sbatch_job_id(sub.out);
  if (sub.exit_code != 0 || !job) {
    db::delete_sweep(store, l.sweep_id);
    std::string why = sub.err.empty() ? sub.out : sub.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    throw Error("sbatch refused the job (exit code " + std::to_string(sub.exit_code) + "): " + why +
                "\nthe script is " + l.dir.script() + "; nothing was recorded in " + l.db_path);
  }
  l.job_id = *job;
  db::set_launch_job(store, launch_id, l.job_id);
  write_info(l, run_key, resolved.name);
  out << "submitted job " << l.job_id << ": sweep '" << resolved.name << "', " << l.trials
      << " trials in " << tasks << " array task" << (tasks == 1 ? "" : "s") << " (1-" << tasks
      << (b.parallelism ? "%" + std::to_string(*b.parallelism) : std::string()) << ")\n"
      << "run folder: " << l.dir.root << "\n"
      << "recorded as run " << l.sweep_id << " in " << l.db_path << "\n";
  return l;
}

LaunchOutcome follow_launch(db::Store& store, const Launched& l, bool tty, std::ostream& out) {
  const auto job = std::to_string(l.job_id);
  std::set<int64_t> merged;          // tasks whose shard was merged since they left the queue
  std::map<int64_t, bool> complete;  // task -> its shard had every trial finished
  std::string last_line;
  auto merge_task = [&](int64_t task) {
    const std::string shard = l.dir.shard_db(task);
    if (!fs::exists(shard)) return;
    bool done = true;
    for (const auto& r : db::merge_shard(store, shard)) {
      done = done && r.unfinished == 0;
      if (!tty && r.imported > 0) print_merge(r, out);
    }
    complete[task] = done;
  };
  auto failures_since = std::chrono::steady_clock::now();
  bool failing = false;
  for (;;) {
    const auto q = run_command({"squeue", "-h", "-r", "-j", job, "-o", "%K %T"});
    std::map<int64_t, std::string> queued;
    if (q.exit_code == 0) {
      queued = parse_squeue_tasks(q.out);
      failing = false;
    } else if (q.err.find("Invalid job id") == std::string::npos) {
      // The controller may be restarting: keep trying for a while.
      if (!failing) failures_since = std::chrono::steady_clock::now();
      failing = true;
      if (std::chrono::steady_clock::now() - failures_since > std::chrono::seconds(120)) {
        throw Error("squeue keeps failing (" + q.err.substr(0, q.err.find('\n')) + "); job " + job +
                    " may still run: gpusweep merge " + l.dir.root + " when it ends");
      }
      std::this_thread::sleep_for(std::chrono::seconds(2));
      continue;
    }
    int running = 0, pending = 0;
    for (const auto& [task, state] : queued) {
      merged.erase(task);  // requeued: merge again when it leaves the queue
      if (state == "RUNNING" || state == "COMPLETING") {
        ++running;
      } else {
        ++pending;
      }
    }
    for (int64_t task = 1; task <= l.tasks; ++task) {
      if (queued.count(task) == 0U && merged.count(task) == 0U) {
        merge_task(task);
        merged.insert(task);
      }
    }
    const auto [finished, total] = finished_of(store, l.sweep_id);
    const std::string line = "job " + job + ": " + std::to_string(l.tasks - running - pending) +
                             "/" + std::to_string(l.tasks) + " tasks done, " +
                             std::to_string(running) + " running, " + std::to_string(pending) +
                             " pending; " + std::to_string(finished) + "/" + std::to_string(total) +
                             " trials merged";
    if (tty) {
      out << "\r" << line << "\033[K" << std::flush;
    } else if (line != last_line) {
      out << line << "\n" << std::flush;
    }
    last_line = line;
    if (queued.empty()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (tty) out << "\n";

  // Every shard once more (idempotent), then what Slurm says of each task.
  for (int64_t task = 1; task <= l.tasks; ++task) merge_task(task);
  LaunchOutcome result = report_unfinished(l, complete, out);
  std::tie(result.finished, result.total) = finished_of(store, l.sweep_id);
  return result;
}

std::string launch_summary(const Launched& l, const LaunchOutcome& r) {
  std::ostringstream out;
  out << "job " << l.job_id << ": " << (l.tasks - r.failed) << "/" << l.tasks
      << " tasks completed; " << r.finished << "/" << r.total << " trials merged into " << l.db_path
      << " (run " << l.sweep_id << ")\n";
  if (r.failed > 0 || r.finished < r.total) {
    out << "to finish: sbatch --array="
        << (r.failed_ids.empty() ? "1-" + std::to_string(l.tasks) : r.failed_ids) << " "
        << l.dir.script() << " (each task resumes its shard), then: gpusweep merge " << l.dir.root
        << "\n";
  }
  return out.str();
}

void check_script_options(const BatchScript& b) {
  for (const auto& a : b.extra) {
    if (a.empty() || a[0] != '-') {
      throw UsageError("--sbatch-arg '" + a + "': give one sbatch option per flag, written " +
                       "with '=' so that it is not read as a gpusweep option, e.g. " +
                       "--sbatch-arg=--qos=high (spaces and quotes in it are kept)");
    }
    if (const auto problem = sbatch_line_problem(a)) {
      throw UsageError("--sbatch-arg '" + a + "' has " + *problem +
                       ": an #SBATCH line cannot carry it; give the option on one line without it");
    }
  }
  if (b.partition) {
    const std::string& p = *b.partition;
    const bool ok = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
             c == ',';
    });
    if (!ok) {
      throw UsageError("--partition '" + p + "': give a partition name (letters, digits, " +
                       "'-', '_', '.'; several separated by ','): sinfo lists them");
    }
  }
}

void check_run_dir(const std::string& run_dir) {
  const std::string where =
      run_dir.empty() ? fs::current_path().string() : fs::absolute(run_dir).string();
  auto problem = sbatch_line_problem(where);
  if (!problem && where.find('\\') != std::string::npos) {
    problem = "a backslash, which turns off Slurm's %a in the log file name";
  }
  if (problem) {
    throw UsageError(std::string(run_dir.empty() ? "the working directory '" : "--run-dir '") +
                     where + "' has " + *problem + ", so a Slurm batch script cannot name it: " +
                     (run_dir.empty() ? "run from another folder or give --run-dir DIR"
                                      : "give another folder"));
  }
}

}  // namespace gpusweep::host
