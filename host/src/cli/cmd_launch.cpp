// `gpusweep launch --slurm`: a sweep as a Slurm job array. Writes the run
// folder (sweep, batch script), records the run in the database, submits with
// sbatch, and with --wait follows the job, merging shards as tasks finish.
#include "cli/cli.hpp"
#include "support/error.hpp"
#include "model/hashing.hpp"
#include "cluster/run_dir.hpp"
#include "run/sweep_run.hpp"
#include "plugins/registry.hpp"
#include "report/results.hpp"
#include "model/shard.hpp"
#include "cluster/slurm.hpp"
#include "support/spawn.hpp"
#include "model/sweep.hpp"

#include <gpusweep/db/shards.hpp>
#include <gpusweep/db/store.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace gpusweep::host {

namespace {

namespace fs = std::filesystem;

struct Launched {
  RunDir dir;
  int64_t job_id = 0;
  int64_t tasks = 0;
  int64_t trials = 0;
  int64_t sweep_id = 0;
  std::string db_path;
};

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
  nlohmann::json j{{"db", l.db_path},     {"sweep", sweep},        {"run", l.sweep_id},
                   {"run_key", run_key},  {"tasks", l.tasks},      {"trials", l.trials},
                   {"scheduler", "slurm"}};
  if (l.job_id != 0) j["job_id"] = l.job_id;
  write_file(l.dir.info_file(), j.dump(2) + "\n");
}

// Positive integer options, named in the error.
std::optional<int64_t> positive(const po::variables_map& vm, const std::string& flag,
                                int64_t max) {
  if (vm.count(flag) == 0U) return std::nullopt;
  const int64_t v = vm[flag].as<int64_t>();
  if (v < 1 || v > max) {
    throw UsageError("--" + flag + " " + std::to_string(v) + ": use 1 to " + std::to_string(max));
  }
  return v;
}

// Counts of the merged run's trials by status.
std::pair<int64_t, int64_t> finished_of(db::Store& store, int64_t sweep_id) {
  auto st = store.connection().prepare(
      "SELECT count(*), coalesce(sum(status NOT IN ('pending', 'interrupted')), 0) FROM trials "
      "WHERE sweep_id = ?");
  st.bind(1, sweep_id);
  st.step();
  return {st.get_int(1), st.get_int(0)};
}

// Follows the job until no task is left in the queue, merging each task's
// shard when the task leaves it; then reports the tasks that did not finish.
int wait_for(db::Store& store, const Launched& l) {
  const auto job = std::to_string(l.job_id);
  const bool tty = stdout_is_terminal();
  std::set<int64_t> merged;          // tasks whose shard was merged since they left the queue
  std::map<int64_t, bool> complete;  // task -> its shard had every trial finished
  std::string last_line;
  auto merge_task = [&](int64_t task) {
    const std::string shard = l.dir.shard_db(task);
    if (!fs::exists(shard)) return;
    bool done = true;
    for (const auto& r : db::merge_shard(store, shard)) {
      done = done && r.unfinished == 0;
      if (!tty && r.imported > 0) print_merge(r, std::cout);
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
        throw Error("squeue keeps failing (" + q.err.substr(0, q.err.find('\n')) +
                    "); job " + job + " may still run: gpusweep merge " + l.dir.root +
                    " when it ends");
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
                             " pending; " + std::to_string(finished) + "/" +
                             std::to_string(total) + " trials merged";
    if (tty) {
      std::cout << "\r" << line << "\033[K" << std::flush;
    } else if (line != last_line) {
      std::cout << line << "\n" << std::flush;
    }
    last_line = line;
    if (queued.empty()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (tty) std::cout << "\n";

  // Every shard once more (idempotent), then what Slurm says of each task.
  for (int64_t task = 1; task <= l.tasks; ++task) merge_task(task);
  const auto info = run_command({"scontrol", "show", "job", "-o", job});
  const auto records = parse_scontrol_tasks(info.exit_code == 0 ? info.out : "");
  int failed = 0;
  std::string failed_ids;
  for (int64_t task = 1; task <= l.tasks; ++task) {
    const auto it = records.find(task);
    const bool shard_done = complete.count(task) != 0U && complete.at(task);
    std::string state;
    std::string log = l.dir.task_log(task);
    if (it != records.end()) {
      const auto& r = it->second;
      if (r.state == "COMPLETED" && r.exit_code == "0:0" && shard_done) continue;
      state = r.state + " (exit code " + r.exit_code + (r.reason.empty() || r.reason == "None"
                                                             ? std::string()
                                                             : ", " + r.reason) + ")";
      if (!r.std_out.empty()) log = r.std_out;
    } else {
      if (shard_done) continue;
      state = "unknown (slurmctld no longer lists it)";
    }
    if (!shard_done) state += fs::exists(l.dir.shard_db(task)) ? ", its shard has unfinished trials"
                                                               : ", no shard database";
    ++failed;
    failed_ids += (failed_ids.empty() ? "" : ",") + std::to_string(task);
    std::cout << "task " << task << " of job " << job << " failed: " << state << "\n";
    const std::string tail = tail_lines(log, 15);
    if (tail.empty()) {
      std::cout << "  (no log at " << log << ")\n";
    } else {
      std::cout << "  last lines of " << log << ":\n";
      std::istringstream lines(tail);
      for (std::string s; std::getline(lines, s);) std::cout << "  | " << s << "\n";
    }
  }
  const auto sweep = store.sweep(l.sweep_id);
  std::cout << "\n" << results_table(*sweep, store.trials(l.sweep_id));
  const auto [finished, total] = finished_of(store, l.sweep_id);
  std::cout << "job " << job << ": " << (l.tasks - failed) << "/" << l.tasks
            << " tasks completed; " << finished << "/" << total << " trials merged into "
            << l.db_path << " (run " << l.sweep_id << ")\n";
  if (failed > 0 || finished < total) {
    std::cout << "to finish: sbatch --array=" << (failed_ids.empty() ? "1-" + std::to_string(l.tasks) : failed_ids)
              << " " << l.dir.script() << " (each task resumes its shard), then: gpusweep merge "
              << l.dir.root << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int cmd_launch(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>()->required(), "sweep file (JSON)")(
      "slurm", po::bool_switch(), "submit to Slurm as a job array (required: the only scheduler)")(
      "partition", po::value<std::string>(), "Slurm partition (sbatch --partition)")(
      "gpus-per-task", po::value<int64_t>(), "GPUs for each task (sbatch --gpus-per-task)")(
      "cpus-per-task", po::value<int64_t>(), "CPUs for each task (sbatch --cpus-per-task)")(
      "time", po::value<int64_t>(), "time limit of each task in minutes (sbatch --time)")(
      "array-parallelism", po::value<int64_t>(),
      "at most N tasks at once (sbatch --array=1-T%N)")(
      "trials-per-task", po::value<int64_t>()->default_value(1),
      "trials each task runs (raised to fit the 1000 tasks an array may have)")(
      "sbatch-arg", po::value<std::vector<std::string>>()->composing(),
      "another #SBATCH line for the script, e.g. --sbatch-arg=--qos=high (repeatable)")(
      "wait", po::bool_switch(),
      "follow the job: progress, merge shards as tasks finish, report failed tasks")(
      "run-dir", po::value<std::string>(),
      "folder for the sweep, the script, shards and logs, on storage every node sees "
      "(default: gpusweep-runs/NAME-TIME)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a setting: key=value (base), measure.key=value (protocol); repeatable");
  add_db_option(o);
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "launch",
      "SWEEP.json --slurm [--partition P] [--gpus-per-task N] [--cpus-per-task N]\n"
      "       [--time MIN] [--array-parallelism N] [--trials-per-task N]\n"
      "       [--sbatch-arg=ARG ...] [--wait] [--db FILE] [--run-dir DIR]",
      "Runs a sweep as a Slurm job array: task i of n runs `gpusweep run --shard i/n`\n"
      "(every n-th trial) into its own shard database in the run folder, so that no\n"
      "SQLite file is written from two nodes; a requeued task resumes its shard. The\n"
      "run and the job id are recorded in --db, where `gpusweep merge RUN_DIR` (or\n"
      "--wait, as tasks finish) gathers the shards. The run folder must be on a file\n"
      "system the nodes share, and this gpusweep and its plugins reachable there.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  if (!vm["slurm"].as<bool>()) {
    throw UsageError("gpusweep launch: pass --slurm (Slurm is the scheduler gpusweep launches on; "
                     "to split a sweep by hand, use gpusweep run --shard i/n)");
  }
  const auto gpus = positive(vm, "gpus-per-task", 1024);
  const auto cpus = positive(vm, "cpus-per-task", 100000);
  const auto minutes = positive(vm, "time", 525600);
  const auto parallel = positive(vm, "array-parallelism", kMaxArrayTasks);
  const auto per_task_flag = positive(vm, "trials-per-task", 1000000);
  std::vector<std::string> extra;
  if (vm.count("sbatch-arg") != 0U) extra = vm["sbatch-arg"].as<std::vector<std::string>>();
  for (const auto& a : extra) {
    if (a.empty() || a[0] != '-' || a.find('\n') != std::string::npos) {
      throw UsageError("--sbatch-arg '" + a + "': give one sbatch option per flag, written " +
                       "with '=' so that it is not read as a gpusweep option, e.g. " +
                       "--sbatch-arg=--qos=high");
    }
  }
  if (vm.count("partition") != 0U && vm["partition"].as<std::string>().empty()) {
    throw UsageError("--partition: give a partition name (sinfo lists them)");
  }

  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  if (vm.count("set") != 0U) apply_overrides(spec, vm["set"].as<std::vector<std::string>>());
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe(spec.workload);
  validate_sweep(spec, info.manifest);
  const auto plan = plan_trials(spec, info.manifest);
  const auto [tasks, per_task] = array_shape(static_cast<int64_t>(plan.size()), *per_task_flag);
  if (per_task > *per_task_flag) {
    std::cout << "note: " << plan.size() << " trials in at most " << kMaxArrayTasks
              << " array tasks: " << per_task << " trials per task\n";
  }

  Launched l;
  l.tasks = tasks;
  l.trials = static_cast<int64_t>(plan.size());
  l.db_path = fs::absolute(vm["db"].as<std::string>()).string();
  const std::string root = vm.count("run-dir") != 0U
                               ? vm["run-dir"].as<std::string>()
                               : "gpusweep-runs/" + job_name_for(spec.name).substr(9) + "-" +
                                     utc_stamp();
  l.dir.root = fs::absolute(root).lexically_normal().string();
  if (!l.dir.root.empty() && l.dir.root.back() == '/') l.dir.root.pop_back();
  std::error_code ec;
  if (fs::exists(l.dir.root) && !fs::is_empty(l.dir.root, ec)) {
    throw UsageError("--run-dir '" + l.dir.root + "' exists and is not empty: give a new folder " +
                     "(a launch never reuses one; `gpusweep merge` reads an old one)");
  }
  fs::create_directories(l.dir.shard_dir(), ec);
  if (!ec) fs::create_directories(l.dir.log_dir(), ec);
  if (ec) {
    throw UsageError("--run-dir '" + l.dir.root + "': cannot create it (" + ec.message() +
                     "); give a folder you can write, on storage the nodes share");
  }

  // The sweep as the tasks will read it; its hash is what they compute.
  write_file(l.dir.sweep_file(), spec.to_json().dump(2) + "\n");
  const SweepSpec resolved = load_sweep_file(l.dir.sweep_file());
  const std::string spec_json = canonical_json(resolved.to_json());
  const std::string run_key = "launch:" + utc_stamp() + "-" + random_hex(8);

  db::Store store(l.db_path, db::Connection::Mode::read_write);
  db::SweepRecord rec;
  rec.name = resolved.name;
  rec.workload = resolved.workload;
  rec.file_path = l.dir.sweep_file();
  rec.file_hash = hash_file(l.dir.sweep_file());
  rec.spec_json = spec_json;
  rec.spec_hash = hash_text(spec_json);
  rec.run_key = run_key;
  rec.shard_count = tasks;
  l.sweep_id = store.create_sweep(rec, to_rows(plan_trials(resolved, info.manifest), info));
  const int64_t launch_id = db::record_launch(store, l.sweep_id, "slurm", l.dir.root, tasks);

  BatchScript b;
  b.job_name = job_name_for(resolved.name);
  b.tasks = tasks;
  b.trials = l.trials;
  b.parallelism = parallel;
  if (vm.count("partition") != 0U) b.partition = vm["partition"].as<std::string>();
  b.gpus_per_task = gpus;
  b.cpus_per_task = cpus;
  b.time_min = minutes;
  b.extra = extra;
  b.log_dir = l.dir.log_dir();
  b.exe = self_executable();
  b.sweep_file = l.dir.sweep_file();
  b.run_key = run_key;
  b.shard_dir = l.dir.shard_dir();
  b.plugin_dirs = {fs::path(info.file.path).parent_path().string()};
  write_file(l.dir.script(), batch_script(b));
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
    throw Error("sbatch refused the job (exit code " + std::to_string(sub.exit_code) +
                "): " + why + "\nthe script is " + l.dir.script() +
                "; nothing was recorded in " + l.db_path);
  }
  l.job_id = *job;
  db::set_launch_job(store, launch_id, l.job_id);
  write_info(l, run_key, resolved.name);
  std::cout << "submitted job " << l.job_id << ": sweep '" << resolved.name << "', " << l.trials
            << " trials in " << tasks << " array task" << (tasks == 1 ? "" : "s") << " (1-"
            << tasks << (parallel ? "%" + std::to_string(*parallel) : std::string()) << ")\n"
            << "run folder: " << l.dir.root << "\n"
            << "recorded as run " << l.sweep_id << " in " << l.db_path << "\n";
  if (!vm["wait"].as<bool>()) {
    std::cout << "follow it with: squeue -j " << l.job_id << "\n"
              << "when it ends:   gpusweep merge " << l.dir.root << "\n";
    return 0;
  }
  return wait_for(store, l);
}

}  // namespace gpusweep::host
