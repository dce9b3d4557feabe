// Recording and running a run; see sweep_run.hpp.
#include "run/sweep_run.hpp"

#include "analysis/check.hpp"
#include "analysis/compare.hpp"
#include "analysis/precision.hpp"
#include "analysis/race.hpp"
#include "run/gpu_window.hpp"
#include "spec/device.hpp"
#include "spec/hashing.hpp"
#include "spec/stats.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "support/nvml.hpp"
#include "support/spawn.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

namespace gpusweep::host {

// Seconds of each matmul benchmark (CPU, and the GPU where there is one)
// a FLOP-counting workload's trial runs after its warmup.
constexpr double kFlopsPeakProbeS = 0.25;

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

void check_jobs(int jobs) {
  if (jobs < 1 || jobs > 256) throw UsageError("--jobs " + std::to_string(jobs) + ": use 1 to 256");
}

SweepRun::SweepRun(const SweepSpec& spec, const PluginInfo& info, const RunRequest& request)
    : spec_(spec), info_(info), request_(request) {
  check_jobs(request.jobs);
  if (request.shard && spec.measure.precision > 0) {
    throw UsageError(spec.source +
                     ": measure.precision adds rounds as it learns, on one machine, and cannot "
                     "run as shards (--shard, launch): run without them, or drop "
                     "measure.precision");
  }
  open_results(store_, request.db_path);
  db::SweepRecord fresh = sweep_record(spec);
  std::optional<db::SweepRecord> found;
  if (request.shard) {
    // A shard always resumes: a requeued or re-run task continues its slice.
    found = store_->shard_run(request.run_key, request.shard->index);
    if (found && found->spec_hash != fresh.spec_hash) {
      throw UsageError("shard " + request.shard->label() + " of run '" + request.run_key + "' in " +
                       request.db_path + " was started from a different sweep (stored " + "spec " +
                       found->spec_hash + ", now " + fresh.spec_hash +
                       "); use another --db or --run-key for the changed sweep");
    }
  } else if (request.resume) {
    found = store_->latest_sweep(spec.name);
    if (found && found->spec_hash != fresh.spec_hash) {
      throw UsageError("cannot resume sweep '" + spec.name + "' (run " + std::to_string(found->id) +
                       "): the sweep changed since it started " +
                       (!spec.check ? "" : "(for a check: a build's hash or a tolerance) ") +
                       "(stored spec " + found->spec_hash + ", now " + fresh.spec_hash +
                       "); run without --resume to start a new run");
    }
    started_instead_ = !found;
  }
  if (found) {
    lock_ = db::RunLock::try_acquire(request.db_path, found->id);
    if (!lock_) {
      throw UsageError("sweep '" + spec.name + "' (run " + std::to_string(found->id) +
                       ") is being run by another gpusweep process on " + request.db_path +
                       "; wait for it to finish, or start a new run without --resume");
    }
    if (!request.allow_plugin_change) check_plugin_build(found->id);
    if (spec_.check) keep_first_judgement(*found);
    store_->set_sweep_status(found->id, db::SweepStatus::running);
    record_ = *store_->sweep(found->id);
    return;
  }
  if (request.kind) fresh.kind = *request.kind;
  fresh.file_path = request.file_path;
  fresh.file_hash = request.file_hash;
  auto plan = request.initial_plan ? *request.initial_plan : plan_trials(spec, info.manifest);
  if (request.shard) {
    plan = shard_slice(plan, *request.shard);
    fresh.run_key = request.run_key;
    fresh.shard_index = request.shard->index;
    fresh.shard_count = request.shard->count;
  }
  const int64_t id = store_->create_sweep(fresh, rows_of(plan));
  lock_ = db::RunLock::try_acquire(request.db_path, id);
  if (!lock_) {
    throw UsageError("run " + std::to_string(id) + " of sweep '" + spec.name +
                     "' was taken over by a `resume` as it was created; let that one run it");
  }
  record_ = *store_->sweep(id);
}

void SweepRun::keep_first_judgement(const db::SweepRecord& found) {
  const SweepSpec stored = parse_sweep(found.spec_json, "run " + std::to_string(found.id));
  if (stored.check && stored.check->judged_rounds) {
    spec_.check->judged_rounds = stored.check->judged_rounds;
  } else if (found.status == db::SweepStatus::finished) {
    int64_t rounds = 0;
    for (const auto& t : store_->trials(found.id)) rounds = std::max(rounds, t.plan.repeat + 1);
    spec_.check->judged_rounds = rounds;
  } else {
    return;
  }
  store_->set_sweep_spec(found.id, canonical_json(spec_.to_json()));
}

void SweepRun::check_plugin_build(int64_t run_id) {
  for (const auto& t : store_->trials(run_id)) {
    // Only results count: a trial that has not finished is run afresh.
    if (t.status == db::TrialStatus::pending || t.status == db::TrialStatus::interrupted) continue;
    const PluginInfo& info = info_for(Json::parse(t.plan.config_json));
    const std::string& ran = t.run_plugin_hash.value_or(t.plan.plugin_hash);
    if (ran == info.hash) continue;
    if (t.plan.plugin_version != info.manifest.version) {
      throw UsageError("cannot continue run " + std::to_string(run_id) + " of sweep '" +
                       spec_.name + "': its trials ran workload version " + t.plan.plugin_version +
                       ", and the workload found now (" + info.file.path + ") is version " +
                       info.manifest.version +
                       " (for a Python workload: its module or a module it imports from its "
                       "folder changed). Put the old version back, start a new run (without "
                       "--resume), or pass --allow-plugin-change to mix them");
    }
    throw UsageError("cannot continue run " + std::to_string(run_id) + " of sweep '" + spec_.name +
                     "': its trials are of plugin build " + ran.substr(0, 12) + " (" +
                     t.plan.plugin_path + "), and the plugin found now, " + info.file.path +
                     ", is build " + info.hash.substr(0, 12) +
                     ": a rebuilt plugin may measure something else. Put the old build back, "
                     "start a new run (without --resume), or pass --allow-plugin-change to mix "
                     "them (each trial records the build that ran it)");
  }
}

std::vector<TrialJob> SweepRun::pending_jobs(size_t* finished_before) {
  const auto keys = varying_keys(spec_);
  const std::string measure_json = spec_.measure.to_json().dump();
  // measure.vary_seed: the plugin's integer `seed` parameter and its range.
  const ParamSpec* seed_param = info_.manifest.find("seed");
  if (!spec_.measure.vary_seed || seed_param == nullptr || seed_param->type != ParamType::integer) {
    seed_param = nullptr;
  }
  std::vector<TrialJob> jobs;
  *finished_before = 0;
  for (const auto& t : store_->trials(record_.id)) {
    if (t.status != db::TrialStatus::pending && t.status != db::TrialStatus::interrupted) {
      ++*finished_before;
      continue;
    }
    TrialJob job;
    job.trial_id = t.id;
    // The config and repeat first, numbered as every table numbers them, so
    // that a label cut to fit a progress line keeps them.
    const Json planned = Json::parse(t.plan.config_json);
    const std::string settings = config_label(planned, keys);
    job.label = "config " + std::to_string(t.plan.config_index + 1);
    if (spec_.measure.repeats > 1 || t.plan.repeat > 0) {
      job.label += " repeat " + std::to_string(t.plan.repeat + 1);
    }
    if (!settings.empty()) job.label += ": " + settings;
    const PluginInfo& info = info_for(planned);
    job.worker.plugin_path = info.file.path;
    Json config = worker_config(planned);
    job.plugin_hash = info.hash;
    if (!request_.builds.empty()) job.build = planned.at(kBuildKey).get<std::string>();
    std::optional<uint64_t> seed;
    if (seed_param != nullptr && t.plan.repeat > 0) {
      auto it = config.find("seed");
      if (it != config.end() && it->is_number_unsigned()) {
        const auto low = static_cast<uint64_t>(std::max(0.0, seed_param->min.value_or(0)));
        const auto high = static_cast<uint64_t>(seed_param->max.value_or(4294967295.0));
        seed = repeat_seed(it->get<uint64_t>(), t.plan.repeat, low, high);
        *it = *seed;
      }
    }
    job.worker.config_json = config.dump();
    job.worker.measure_json = measure_json;
    // A workload that counts its step's FLOPs: the trial measures its
    // device's matmul peak in its own dtype, for compare's MFU.
    if (info.runtime_info.counts_flops.value_or(false)) {
      job.worker.probe_matmul_s = kFlopsPeakProbeS;
    }
    job.worker.max_memory_bytes = std::floor(spec_.measure.max_memory_bytes);
    job.timeout_s = spec_.measure.timeout_s;
    job.silence_s = spec_.measure.silence_s;
    job.round = t.plan.repeat;
    job.config = t.plan.config_index;
    job.collector = std::make_unique<TrialCollector>(info.manifest, spec_.measure);
    // The seed it trained from, when not the config's (measure.vary_seed).
    if (seed) job.collector->add_stat(host_stat::seed, static_cast<double>(*seed));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

namespace {

constexpr const char* kParallelStartsNote =
    "; their setups and final evaluations run all at once between cycles, no block measured "
    "meanwhile (measure.starts)";

}  // namespace

InterleavePlan plan_interleave(const MeasureSpec& measure, const std::vector<Json>& configs,
                               unsigned gpus, bool footprint_measurable) {
  InterleavePlan plan;
  plan.interleave.seed = measure.order_seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
  std::set<std::string> distinct;
  bool any_gpu = false;
  std::string threaded;  // a config's threads setting other than 1
  for (const Json& c : configs) {
    distinct.insert(c.dump());
    any_gpu = any_gpu || on_gpu(device_setting(c), gpus);
    if (const auto t = c.find("threads"); t != c.end() && t->is_number() && *t != 1) {
      threaded = t->dump();
    }
  }
  // Setups and final evaluations all at once between cycles: where a
  // process's start is a GPU context, and never under measure.target.
  plan.interleave.parallel_starts =
      !measure.target && (measure.starts == MeasureSpec::Starts::parallel ||
                          (measure.starts == MeasureSpec::Starts::automatic && any_gpu));
  if (measure.interleave > 0) {
    plan.interleave.window = static_cast<int>(measure.interleave);
  } else if (!threaded.empty() && !any_gpu && distinct.size() > 1) {
    plan.note =
        "trials run one after another, each round in its own balanced order: a config runs "
        "threads=" +
        threaded +
        " (0: LibTorch's default, one per core), and taking turns slows a multi-threaded "
        "block by far more than drift would (dqn at 2 threads on 2 cores: 19-86% a block); set "
        "measure.interleave to take turns anyway";
    return plan;
  } else if (any_gpu && footprint_measurable && distinct.size() > 1) {
    plan.probe_footprint = true;
    plan.note =
        "trials on a GPU: a short probe measures what one holds on the device, then as many "
        "take turns as fit (measure.interleave \"auto\")";
    if (plan.interleave.parallel_starts) plan.note += kParallelStartsNote;
    return plan;
  } else if (any_gpu) {
    plan.note =
        "trials run one after another (measure.interleave \"auto\" does not interleave GPU "
        "trials: each waiting trial would hold its device memory); set measure.interleave to "
        "the number that fit on the device to interleave them";
    return plan;
  } else {
    plan.interleave.window =
        static_cast<int>(std::min<size_t>(static_cast<size_t>(kAutoInterleave), distinct.size()));
  }
  if (measure.interleave == 0 && distinct.size() == 1) {
    plan.note = "one config: its trials run one after another";
  } else if (plan.interleave.window > 1) {
    plan.note = "interleaved: " + std::to_string(plan.interleave.window) +
                " trials alive at once take turns block by block, one block measured at a "
                "time, so that drift of the machine hits every config alike "
                "(measure.interleave)";
    if (measure.target) {
      plan.interleave.by_round = true;
      plan.note += "; one seed's trials at a time, the next seed's after them";
    }
    if (plan.interleave.parallel_starts) plan.note += kParallelStartsNote;
  } else {
    plan.note = "trials run one after another (measure.interleave 1)";
  }
  return plan;
}

const InterleavePlan& SweepRun::interleave_plan(const std::vector<TrialJob>& jobs) {
  if (!interleave_) {
    interleave_ = plan_execution(spec_.measure, planned_configs(jobs), request_);
  }
  return *interleave_;
}

namespace {

// The GPUs for request.gpus and request.jobs on this machine, for a window.
GpuAssignment gpus_for(const RunRequest& request, int window, const std::vector<Json>& configs) {
  const Nvml* nvml = Nvml::shared();
  std::vector<std::string> uuids;
  for (unsigned i = 0; nvml != nullptr && i < nvml->device_count(); ++i) {
    const auto info = nvml->device(i);
    uuids.push_back(info ? info->uuid : std::string());
  }
  return assign_gpus(request.gpus, visible_gpus(std::getenv("CUDA_VISIBLE_DEVICES"), uuids),
                     request.jobs, window, configs);
}

}  // namespace

InterleavePlan plan_execution(const MeasureSpec& measure, const std::vector<Json>& configs,
                              const RunRequest& request) {
  const Nvml* nvml = Nvml::shared();
  // Without NVML, the driver's device nodes say whether `auto` is a GPU
  // (else such trials were planned as CPU trials and took turns on the GPU).
  InterleavePlan plan = plan_interleave(
      measure, configs, nvml ? nvml->device_count() : nvidia_device_nodes(), nvml != nullptr);
  plan.gpus = gpus_for(request, plan.interleave.window, configs);
  return plan;
}

void label_shared_oom(db::TrialOutcome& outcome, const GpuAssignment& gpus) {
  if (!gpus.shared || outcome.status != db::TrialStatus::oom || !outcome.interleave_group) return;
  outcome.error = outcome.error.value_or("out of memory") + " [it took turns on " +
                  (gpus.gpus.empty() ? "the GPU" : "GPU " + gpus.gpus[0]) +
                  " with other trials, each holding its device memory while it waited: the "
                  "memory may be theirs; run it with measure.interleave 1 to tell]";
}

namespace {

// At the first look: the config furthest from the target, the rounds it
// would need at its present spread, and whether the budget covers them
// (round_s: what a round of the configs still open costs; left_s: the
// budget left). "" when it does.
std::string reach_forecast(const PrecisionStatus& status, int64_t rounds, double target,
                           double round_s, double left_s) {
  if (std::isnan(status.widest_half_width) || status.widest_config < 0) return "";
  const auto need = rounds_needed(status.widest_half_width, rounds, target, kMaxRounds);
  const int64_t covered =
      rounds + (round_s > 0 ? static_cast<int64_t>(std::floor(std::max(0.0, left_s) / round_s))
                            : kMaxRounds);
  if (need && *need <= covered) return "";
  std::string out = "the target looks out of reach in the budget: #" +
                    std::to_string(status.widest_config + 1) + " is at ±" +
                    fixed(100 * status.widest_half_width, 1) + "% after " + std::to_string(rounds) +
                    " rounds, and at its spread ±" + fixed(100 * target, 1) + "% would take ";
  out += need ? "about " + std::to_string(*need) + " rounds"
              : "more than " + std::to_string(kMaxRounds) + " rounds (the most a run adds)";
  out += ", where measure.budget_s covers about " + std::to_string(std::min(covered, kMaxRounds));
  if (need) {
    out += " (about " + fixed(static_cast<double>(*need - covered + 1) * round_s, 0) +
           " s more of measure.budget_s would do)";
  }
  return out + "; it stops short of the target unless the config turns out clearly apart";
}

}  // namespace

Capping SweepRun::capping() {
  Capping c;
  if (!spec_.measure.target || spec_.measure.target->cap <= 0) return c;
  c.slack = spec_.measure.target->cap;
  if (is_tune_run(spec_)) c.uncapped_from = kConfirmRound;
  c.leader = round_leaders_;
  // Rounds begun before (a resumed run) cap from their finished trials too.
  for (const auto& stored : stored_trials(*store_, record_.id)) {
    const db::TrialRecord& t = stored.row;
    if (!db::has_finished(t.status)) continue;
    std::optional<double> reached;  // its time, when it reached the target
    if (t.status == db::TrialStatus::ok) {
      const auto time = stored.target();
      if (time && !time->censored) reached = time->time_s;
    }
    c.trained(t.plan.repeat, t.plan.config_index, reached);
  }
  return c;
}

bool SweepRun::probe_gpu_footprint(const std::vector<TrialJob>& jobs,
                                   const RunnerCallbacks& callbacks) {
  // The largest batch is the largest footprint of the usual grid.
  const TrialJob* largest = &jobs.front();
  int64_t most = -1;
  for (const auto& j : jobs) {
    const int64_t b = Json::parse(j.worker.config_json).value("batch_size", int64_t{0});
    if (b > most) {
      most = b;
      largest = &j;
    }
  }
  const MeasureSpec measure = footprint_probe_measure(spec_.measure);
  TrialJob probe;
  probe.label = "footprint probe";
  probe.worker = largest->worker;
  probe.worker.measure_json = measure.to_json().dump();
  probe.timeout_s = spec_.measure.timeout_s;
  probe.silence_s = spec_.measure.silence_s;
  probe.collector =
      std::make_unique<TrialCollector>(info_for(planned_configs(jobs).front()).manifest, measure);
  std::vector<db::MetricSample> metrics;
  RunnerCallbacks cb;
  cb.on_finish = [&metrics](const TrialJob&, db::TrialOutcome&& o) { metrics = o.metrics; };
  cb.on_notice = callbacks.on_notice;
  std::vector<TrialJob> one;
  one.push_back(std::move(probe));
  Runner runner(worker_executable(), 1, request_.fork_server, Interleave{}, interleave_->gpus,
                Capping{});
  if (!runner.run(std::move(one), cb)) return false;
  std::set<std::string> distinct;
  for (const auto& c : planned_configs(jobs)) distinct.insert(c.dump());
  const GpuWindow w = gpu_window(metrics, Nvml::shared(), distinct.size());
  gpu_window_ = w.window;
  if (callbacks.on_notice) callbacks.on_notice(w.note);
  return true;
}

bool SweepRun::run_jobs(std::vector<TrialJob> jobs, RunnerCallbacks callbacks) {
  if (jobs.empty()) return true;
  interleave_plan(jobs);
  if (interleave_->probe_footprint) {
    if (!gpu_window_ && !probe_gpu_footprint(jobs, callbacks)) return false;
    if (interleave_->interleave.window != *gpu_window_) {
      interleave_->interleave.window = *gpu_window_;
      interleave_->gpus = gpus_for(request_, *gpu_window_, planned_configs(jobs));
    }
  }
  const InterleavePlan& plan = *interleave_;
  auto then = callbacks.on_finish;
  // A reader (`serve`) sees the trial running from its start.
  callbacks.on_start = [this, started = callbacks.on_start](const TrialJob& j) {
    store_->mark_started(j.trial_id, utc_now());
    if (started) started(j);
  };
  callbacks.on_finish = [&](const TrialJob& j, db::TrialOutcome&& o) {
    label_shared_oom(o, plan.gpus);
    o.slurm_job_id = request_.scheduler_job_id;
    o.slurm_task_id = request_.scheduler_task_id;
    o.run_plugin_hash = j.plugin_hash;
    store_->commit_trial(j.trial_id, o);
    if (then) then(j, std::move(o));
  };
  Runner runner(worker_executable(), request_.jobs, request_.fork_server, plan.interleave,
                plan.gpus, capping());
  return runner.run(std::move(jobs), callbacks);
}

PrecisionStatus SweepRun::look_status(int look, const std::set<int64_t>& done) {
  const auto configs = gather_configs(*store_, record_.id);
  if (spec_.check) return check_status(configs, check_options(*spec_.check), done);
  return precision_status(configs, spec_.baseline, spec_.measure.precision, look, done);
}

// The loop of rounds until precise reads top to bottom: look,
// stop for one of three reasons, or plan, record and run the next round.
bool SweepRun::precision_rounds(const RunnerCallbacks& callbacks, const LookCallback& on_look,
                                Clock::time_point started, double first_round_s) {
  const MeasureSpec& m = spec_.measure;
  double round_s = first_round_s;
  std::set<int64_t> done;
  for (;;) {
    const auto trials = store_->trials(record_.id);
    int64_t max_repeat = 0, ordinal = 0;
    std::map<int64_t, std::string> config_of;
    for (const auto& t : trials) {
      max_repeat = std::max(max_repeat, t.plan.repeat);
      ordinal = std::max(ordinal, t.plan.ordinal + 1);
      config_of[t.plan.config_index] = t.plan.config_json;
    }
    Look look;
    look.index = static_cast<int>(max_repeat + 2 - m.repeats);
    look.rounds = max_repeat + 1;
    look.status = look_status(look.index, done);
    look.summary =
        !spec_.check ? precision_summary(look.status, m.precision) : check_summary(look.status);
    for (const auto& c : look.status.configs) {
      if (c.done()) done.insert(c.config_index);
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    // The round's configs (the baseline and those not done), in the round's
    // own seeded order (round_order), not the configs' order.
    std::vector<uint64_t> configs;
    for (const auto& c : look.status.configs) {
      if (!c.done() || c.baseline) configs.push_back(static_cast<uint64_t>(c.config_index));
    }
    std::vector<db::TrialPlan> round;
    for (uint64_t c : round_order(configs, m.order_seed, max_repeat + 1)) {
      const auto index = static_cast<int64_t>(c);
      const Json config = Json::parse(config_of[index]);
      round.push_back(trial_row(info_for(config), ordinal + static_cast<int64_t>(round.size()),
                                index, max_repeat + 1, config));
    }
    if (look.status.done) {
      look.stop = !spec_.check ? "every config is within the target or clearly apart"
                               : "every config is decided";
    } else if (look.rounds >= kMaxRounds) {
      look.stop = "the most rounds a run adds (" + std::to_string(kMaxRounds) + ") are done";
    } else if (elapsed + round_s * static_cast<double>(round.size()) /
                             static_cast<double>(std::max<size_t>(1, config_of.size())) >
               m.budget_s) {
      look.stop = "the next round would overrun measure.budget_s (" + fixed(elapsed, 0) + " of " +
                  fixed(m.budget_s, 0) + " s spent)";
    }
    look.added = look.stop.empty() ? round.size() : 0;
    if (look.index == 1 && !look.status.done && !spec_.check) {
      const double open_round_s = round_s * static_cast<double>(round.size()) /
                                  static_cast<double>(std::max<size_t>(1, config_of.size()));
      look.forecast =
          reach_forecast(look.status, look.rounds, m.precision, open_round_s, m.budget_s - elapsed);
    }
    if (on_look) on_look(look);
    if (!look.stop.empty()) return true;
    store_->add_trials(record_.id, round);
    size_t finished = 0;
    const auto round_start = Clock::now();
    if (!run_jobs(pending_jobs(&finished), callbacks)) return false;
    // A whole round's time, from the share of the configs this one ran.
    round_s = std::chrono::duration<double>(Clock::now() - round_start).count() *
              static_cast<double>(config_of.size()) / static_cast<double>(round.size());
  }
}

bool SweepRun::run_more(const std::vector<db::TrialPlan>& rows, RunnerCallbacks callbacks) {
  if (!rows.empty()) store_->add_trials(record_.id, rows);
  size_t finished = 0;
  auto jobs = pending_jobs(&finished);
  // Each call plans its own turns: its configs are not the first call's.
  interleave_.reset();
  return run_jobs(std::move(jobs), std::move(callbacks));
}

void SweepRun::finish(bool complete) {
  store_->set_sweep_status(record_.id,
                           complete ? db::SweepStatus::finished : db::SweepStatus::interrupted);
  record_ = *store_->sweep(record_.id);
}

bool SweepRun::execute(std::vector<TrialJob> jobs, RunnerCallbacks callbacks,
                       const LookCallback& on_look) {
  const auto started = Clock::now();
  const size_t first = jobs.size();
  bool complete = run_jobs(std::move(jobs), callbacks);
  if (complete && (spec_.measure.precision > 0 || spec_.check)) {
    // What one round (one repeat of every config) took in the first batch.
    const double first_s = std::chrono::duration<double>(Clock::now() - started).count();
    const double per_round =
        first == 0 ? 0
                   : first_s * static_cast<double>(plan_trials(spec_, info_.manifest).size()) /
                         static_cast<double>(spec_.measure.repeats) / static_cast<double>(first);
    complete = precision_rounds(callbacks, on_look, started, per_round);
  }
  finish(complete);
  return complete;
}

}  // namespace gpusweep::host
