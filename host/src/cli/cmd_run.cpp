// `gpusweep run` and `gpusweep resume`: validate a sweep, record its trials,
// run each in its own worker process, commit each result as it finishes.
#include "protocol/worker_args.hpp"
#include "cli/cli.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "model/hashing.hpp"
#include "run/sweep_run.hpp"
#include "run/progress.hpp"
#include "plugins/registry.hpp"
#include "report/results.hpp"
#include "run/runner.hpp"
#include "model/shard.hpp"
#include "cluster/slurm.hpp"
#include "support/spawn.hpp"
#include "model/sweep.hpp"

#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/store.hpp>

#include <filesystem>
#include <iostream>
#include <optional>

namespace gpusweep::host {

namespace {

struct RunOptions {
  std::string db_path;
  bool resume = false;
  int jobs = 1;
  std::optional<std::string> file_path;
  std::optional<std::string> file_hash;
  bool fresh_workers = false;  // exec each trial's worker instead of forking a pre-loaded one
  std::optional<Shard> shard;  // run only this slice, resuming it when the database has it
  std::string run_key;         // with shard: what its sibling shards share
};

void print_plan(const SweepSpec& spec, const PluginManifest& manifest,
                const std::vector<PlannedTrial>& plan) {
  const auto keys = varying_keys(spec);
  const auto configs = expand_configs(spec, manifest);
  std::cout << "sweep '" << spec.name << "': workload " << manifest.name << " "
            << manifest.version << ", " << configs.size() << " configs x "
            << spec.measure.repeats << " repeats = " << plan.size() << " trials\n"
            << "protocol: " << spec.measure.warmup_steps << " warmup steps, "
            << spec.measure.blocks << " blocks of " << spec.measure.steps_per_block
            << " steps, timeout " << spec.measure.timeout_s << " s per trial\n";
  Table t({"#", "config", "baseline"});
  t.right_align(0);
  for (size_t i = 0; i < configs.size(); ++i) {
    t.add_row({std::to_string(i + 1), keys.empty() ? "(base)" : config_label(configs[i], keys),
               !spec.baseline.empty() && matches(configs[i], spec.baseline) ? "yes" : ""});
  }
  std::cout << t.render();
}


std::string outcome_detail(const db::TrialOutcome& o) {
  if (o.summary) {
    std::string d = human_rate(o.summary->throughput_median, o.summary->unit) + ", cv " +
                    fixed(100 * o.summary->throughput_cv, 1) + "%";
    if (o.summary->quality) {
      d += ", " + o.summary->quality_metric.value_or("quality") + " " +
           human_count(*o.summary->quality);
    }
    return d;
  }
  return o.error ? truncate(*o.error, 120) : "";
}

// Opens (or creates) the results database. A database this call created is
// removed again when setting it up fails (on a full disk, say), so a failed
// first run leaves no half-made file behind.
void open_results(std::optional<db::Store>& store, const std::string& path) {
  const bool existed = std::filesystem::exists(path);
  try {
    store.emplace(path, db::Connection::Mode::read_write);
  } catch (const db::DbError&) {
    if (!existed) {
      std::error_code ec;
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::filesystem::remove(path + suffix, ec);
      }
    }
    throw;
  }
}

int execute(const SweepSpec& spec, const PluginInfo& info, const RunOptions& opt) {
  std::optional<db::Store> opened;
  open_results(opened, opt.db_path);
  db::Store& store = *opened;
  const std::string spec_json = canonical_json(spec.to_json());
  const std::string spec_hash = hash_text(spec_json);

  std::optional<db::SweepRecord> sweep;
  std::optional<db::RunLock> lock;  // held until the run ends
  if (opt.shard) {
    // A shard always resumes: a requeued or re-run task continues its slice.
    sweep = store.shard_run(opt.run_key, opt.shard->index);
    if (sweep && sweep->spec_hash != spec_hash) {
      throw UsageError("shard " + opt.shard->label() + " of run '" + opt.run_key + "' in " +
                       opt.db_path + " was started from a different sweep (stored spec " +
                       sweep->spec_hash + ", now " + spec_hash +
                       "); use another --db or --run-key for the changed sweep");
    }
  } else if (opt.resume) {
    sweep = store.latest_sweep(spec.name);
    if (sweep && sweep->spec_hash != spec_hash) {
      throw UsageError("cannot resume sweep '" + spec.name + "' (run " +
                       std::to_string(sweep->id) + "): the sweep changed since it started " +
                       "(stored spec " + sweep->spec_hash + ", now " + spec_hash +
                       "); run without --resume to start a new run");
    }
    if (!sweep) std::cout << "no earlier run of '" << spec.name << "' to resume; starting one\n";
  }
  if (!sweep) {
    db::SweepRecord rec;
    rec.name = spec.name;
    rec.workload = spec.workload;
    rec.file_path = opt.file_path;
    rec.file_hash = opt.file_hash;
    rec.spec_json = spec_json;
    rec.spec_hash = spec_hash;
    auto plan = plan_trials(spec, info.manifest);
    if (opt.shard) {
      plan = shard_slice(plan, *opt.shard);
      rec.run_key = opt.run_key;
      rec.shard_index = opt.shard->index;
      rec.shard_count = opt.shard->count;
    }
    rec.id = store.create_sweep(rec, to_rows(plan, info));
    lock = db::RunLock::try_acquire(opt.db_path, rec.id);
    if (!lock) {
      throw UsageError("run " + std::to_string(rec.id) + " of sweep '" + spec.name +
                       "' was taken over by a `resume` as it was created; let that one run it");
    }
    sweep = store.sweep(rec.id);
  } else {
    lock = db::RunLock::try_acquire(opt.db_path, sweep->id);
    if (!lock) {
      throw UsageError("sweep '" + spec.name + "' (run " + std::to_string(sweep->id) +
                       ") is being run by another gpusweep process on " + opt.db_path +
                       "; wait for it to finish, or start a new run without --resume");
    }
    store.set_sweep_status(sweep->id, "running");
  }

  const auto trials = store.trials(sweep->id);
  const auto keys = varying_keys(spec);
  const std::string measure_json = spec.measure.to_json().dump();
  std::vector<TrialJob> jobs;
  size_t finished_before = 0;
  for (const auto& t : trials) {
    if (t.status != "pending" && t.status != "interrupted") {
      ++finished_before;
      continue;
    }
    TrialJob job;
    job.trial_id = t.id;
    job.label = config_label(Json::parse(t.plan.config_json), keys);
    if (spec.measure.repeats > 1) job.label += " #" + std::to_string(t.plan.repeat + 1);
    job.worker.plugin_path = info.file.path;
    job.worker.config_json = t.plan.config_json;
    job.worker.measure_json = measure_json;
    job.worker.max_memory_bytes = std::floor(spec.measure.max_memory_bytes);
    job.timeout_s = spec.measure.timeout_s;
    job.silence_s = spec.measure.silence_s;
    job.collector = std::make_unique<TrialCollector>(info.manifest, spec.measure);
    jobs.push_back(std::move(job));
  }
  if (opt.shard) std::cout << "shard " << opt.shard->label() << " of ";
  std::cout << "sweep '" << spec.name << "' (run " << sweep->id << ") into " << opt.db_path
            << ": " << jobs.size() << " trials to run";
  if (finished_before > 0) std::cout << ", " << finished_before << " already finished";
  std::cout << ", " << opt.jobs << " at a time\n" << std::flush;

  bool complete = true;
  if (!jobs.empty()) {
    Progress progress(jobs.size(), opt.jobs, stdout_is_terminal());
    RunnerCallbacks cb;
    cb.on_start = [&](const TrialJob& j) { progress.started(j.trial_id, j.label); };
    cb.on_event = [&](const TrialJob& j, const Json& e) { progress.event(j.trial_id, e); };
    const SlurmIds slurm = slurm_ids_from_env();
    cb.on_finish = [&](const TrialJob& j, db::TrialOutcome&& o) {
      o.slurm_job_id = slurm.job_id;
      o.slurm_task_id = slurm.task_id;
      store.commit_trial(j.trial_id, o);
      progress.finished(j.trial_id, o.status, outcome_detail(o));
    };
    cb.on_notice = [&](const std::string& notice) { progress.note(notice); };
    Runner runner(self_executable(), opt.jobs, !opt.fresh_workers);
    complete = runner.run(std::move(jobs), cb);
    progress.done();
  }
  store.set_sweep_status(sweep->id, complete ? "finished" : "interrupted");
  std::cout << "\n" << results_table(*store.sweep(sweep->id), store.trials(sweep->id));
  if (!complete) {
    std::cout << "interrupted: finished trials are saved; continue with: gpusweep resume "
              << spec.name << " --db " << opt.db_path << "\n";
    return 130;
  }
  return 0;
}

}  // namespace

int cmd_run(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>()->required(), "sweep file (JSON)");
  add_db_option(o);
  o.add_options()("resume", po::bool_switch(), "continue the latest run of this sweep: run only "
                                               "its unfinished trials")(
      "jobs,j", po::value<int>()->default_value(1), "worker processes at a time")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override a setting: key=value (base), measure.key=value (protocol); repeatable")(
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
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("sweep", 1);
  auto p = parse_command(
      "run",
      "SWEEP.json [--db FILE] [--resume] [--jobs N] [--set key=value ...] [--dry-run]\n"
      "       [--shard i/n [--run-key KEY]] [--fresh-workers]",
      "Runs every trial of a sweep file, each in its own worker process, and records the\n"
      "results in the database. The sweep is validated against the workload's manifest\n"
      "before anything runs or is written.\n\n"
      "Each trial's process is forked from one that loaded the plugin once (LibTorch's\n"
      "load, about half a second, is paid once per run instead of once per trial);\n"
      "--fresh-workers starts every trial as a new process instead.\n\n"
      "With --shard i/n it runs only every n-th trial of the plan, starting at the i-th,\n"
      "so that n machines (or Slurm array tasks) share a sweep; each shard writes its\n"
      "own database, and `gpusweep merge` gathers the shards into one.",
      o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::string file = vm["sweep"].as<std::string>();
  SweepSpec spec = load_sweep_file(file);
  if (vm.count("set") != 0U) apply_overrides(spec, vm["set"].as<std::vector<std::string>>());
  const int jobs = vm["jobs"].as<int>();
  if (jobs < 1 || jobs > 256) throw UsageError("--jobs " + std::to_string(jobs) + ": use 1 to 256");

  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe(spec.workload);
  validate_sweep(spec, info.manifest);
  const auto plan = plan_trials(spec, info.manifest);
  std::optional<Shard> shard;
  if (vm.count("shard") != 0U) shard = parse_shard(vm["shard"].as<std::string>());
  if (vm.count("run-key") != 0U && !shard) {
    throw UsageError("--run-key names the run a shard belongs to: use it with --shard i/n");
  }
  if (vm["dry-run"].as<bool>()) {
    print_plan(spec, info.manifest, plan);
    if (shard) {
      std::cout << "shard " << shard->label() << ": " << shard_slice(plan, *shard).size()
                << " of the " << plan.size() << " trials\n";
    }
    std::cout << "dry run: nothing was run or written\n";
    return 0;
  }
  RunOptions opt;
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
  opt.fresh_workers = vm["fresh-workers"].as<bool>();
  opt.jobs = jobs;
  opt.file_path = std::filesystem::absolute(file).string();
  opt.file_hash = hash_file(file);
  return execute(spec, info, opt);
}

int cmd_resume(const Args& args) {
  po::options_description o;
  o.add_options()("name", po::value<std::string>(), "sweep name (default: the latest sweep)");
  add_db_option(o);
  o.add_options()("jobs,j", po::value<int>()->default_value(1), "worker processes at a time")(
      "fresh-workers", po::bool_switch(),
      "start each trial's worker as a new process that loads the plugin itself, instead of "
      "forking it from a process that loaded the plugin once (the default)");
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("name", 1);
  auto p = parse_command("resume", "[NAME] [--db FILE] [--jobs N] [--fresh-workers]",
                         "Continues the latest run of a sweep from the database (no sweep file\n"
                         "needed): runs its pending and interrupted trials.",
                         o, pos, args);
  if (p.help) return 0;
  const auto& vm = p.vm;
  const std::string db_path = vm["db"].as<std::string>();
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("no database at '" + db_path + "'; pass --db or run a sweep first");
  }
  SweepSpec spec;
  {
    db::Store store(db_path, db::Connection::Mode::read_write);
    auto sweep = vm.count("name") != 0U ? store.latest_sweep(vm["name"].as<std::string>())
                                        : store.latest_sweep();
    if (!sweep) {
      throw UsageError("no sweep " +
                       (vm.count("name") != 0U ? "named '" + vm["name"].as<std::string>() + "' "
                                               : std::string()) +
                       "in " + db_path);
    }
    spec = stored_spec(*sweep);
  }
  Registry registry(plugin_paths(vm));
  const PluginInfo info = registry.describe(spec.workload);
  validate_sweep(spec, info.manifest);
  RunOptions opt;
  opt.db_path = db_path;
  opt.resume = true;
  opt.fresh_workers = vm["fresh-workers"].as<bool>();
  opt.jobs = vm["jobs"].as<int>();
  return execute(spec, info, opt);
}

}  // namespace gpusweep::host
