// Recording and running a run: what `run`, `resume`, `run --shard`, `launch`
// and the one-config commands (tune-batch, diagnose: probe_session.hpp) share.
// SweepRun opens the database, finds or creates the run (a shard resumes its
// slice, --resume the latest run of the sweep, otherwise a new one), holds
// the run's lock, and runs its unfinished trials, committing each as it ends.
#pragma once

#include "analysis/precision.hpp"
#include "plugin_host/builds.hpp"
#include "plugin_host/registry.hpp"
#include "run/runner.hpp"
#include "spec/shard.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/run_lock.hpp>
#include <gpusweep/db/store.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host {

// A new run's row for spec (name, workload, canonical spec and its hash).
db::SweepRecord sweep_record(const SweepSpec& spec);

// One planned trial as the row a run starts with.
db::TrialPlan trial_row(const PluginInfo& info, int64_t ordinal, int64_t config_index,
                        int64_t repeat, const Json& config);
// Planned trials as the rows a run starts with.
std::vector<db::TrialPlan> to_rows(const std::vector<PlannedTrial>& plan, const PluginInfo& info);

// Opens (or creates) the results database read-write. A database this call
// created is removed again when setting it up fails (on a full disk, say), so
// that a failed first run leaves no half-made file behind.
void open_results(std::optional<db::Store>& store, const std::string& path);

struct RunRequest {
  std::string db_path;
  bool resume = false;  // continue the latest run of the sweep (a new one when there is none)
  int jobs = 1;         // 1..256
  bool fork_server = true;
  std::optional<std::string> file_path;  // the sweep file, for the record
  std::optional<std::string> file_hash;
  std::optional<Shard> shard;  // run only this slice (always resumed)
  std::string run_key;         // with shard: what its sibling shards share
  // The scheduler's ids of this process (a Slurm array task), stamped on
  // every trial it runs; the caller reads them (cluster/slurm.hpp).
  std::optional<int64_t> scheduler_job_id;
  std::optional<int64_t> scheduler_task_id;
  // Continue a run whose trials ran another build of the plugin (a file
  // with another hash); each trial records the build that ran it.
  bool allow_plugin_change = false;
  // The trials a new run starts with, instead of the sweep's whole grid
  // (tune: its first round).
  std::optional<std::vector<PlannedTrial>> initial_plan;
  // run --gpus LIST: the GPUs the workers get, one each (spec/gpus.hpp);
  // none: all visible ones when --jobs > 1 puts trials on GPUs at once.
  std::optional<std::string> gpus;
  // A check's builds by label; empty for any other run. Each config's
  // "build" key picks one; the worker's config goes without it.
  std::map<std::string, RunBuild> builds;
  // What the run is recorded as when not what its spec says (a sweep, a
  // tune, a check): tune-batch's target stage.
  std::optional<db::RunKind> kind;
};

// Throws UsageError for --jobs outside 1..256.
void check_jobs(int jobs);

// How a run's trials take turns (measure.interleave), and why.
struct InterleavePlan {
  Interleave interleave;
  std::string note;    // one line for the run's header
  GpuAssignment gpus;  // which GPU each running trial gets (SweepRun::interleave_plan)
  // "auto" on a GPU with NVML: a short probe worker measures a trial's
  // footprint on the device before the first trial, and the window is what
  // fits (run/gpu_window.hpp).
  bool probe_footprint = false;
};

// measure.interleave as set, or "auto": one window per sweep's configs (up
// to kAutoInterleave), and none when a config runs more than one intra-op
// thread (threads other than 1: a multi-threaded block taking turns ran far
// slower than one after another, bench/run.py interleave_cost). Where a trial
// may run on a GPU (a config naming cuda, or auto on a machine with a GPU),
// trials waiting at their gates would hold device memory: with NVML
// (`footprint_measurable`) the plan asks for a footprint probe (the window is
// then what fits, SweepRun::run_jobs), without it they run one after
// another. gpus: the GPUs NVML sees, or without NVML the driver's device
// nodes (nvidia_device_nodes).
InterleavePlan plan_interleave(const MeasureSpec& measure, const std::vector<Json>& configs,
                               unsigned gpus, bool footprint_measurable = false);

// plan_interleave, then the GPUs for request.gpus and request.jobs on this
// machine (CUDA_VISIBLE_DEVICES, NVML): what a run of these configs does.
// UsageError when the GPUs cannot be handed out as asked.
InterleavePlan plan_execution(const MeasureSpec& measure, const std::vector<Json>& configs,
                              const RunRequest& request);

// An out-of-memory trial that took turns on one GPU with others
// (measure.interleave > 1 on a device; GpuAssignment::shared): each waiting
// trial holds its device memory, so the OOM may be a neighbour's.
// Its error says so, with the fix; it stays an oom. tune never shares a GPU
// (it refuses interleave on one), so its rule that an OOM rules out larger
// batches never sees such a trial.
void label_shared_oom(db::TrialOutcome& outcome, const GpuAssignment& gpus);

class SweepRun {
 public:
  // Finds or creates the run and takes its lock. Throws UsageError when a
  // resumed run's sweep changed, or another process runs it.
  SweepRun(const SweepSpec& spec, const PluginInfo& info, const RunRequest& request);

  db::Store& store() { return *store_; }
  const db::SweepRecord& record() const { return record_; }
  // The run's spec as it runs: a resumed check's carries its first finish.
  const SweepSpec& spec() const { return spec_; }
  // True when --resume found no earlier run and started one.
  bool started_instead_of_resuming() const { return started_instead_; }

  // The trials still to run (pending or interrupted) as runner jobs, and how
  // many of the run's trials had finished before.
  std::vector<TrialJob> pending_jobs(size_t* finished_before);

  // After the planned rounds of a run with measure.precision: how close it
  // is, and whether another round follows (added trials) or why not (stop).
  struct Look {
    int index = 0;       // 1-based: the first look follows measure.repeats rounds
    int64_t rounds = 0;  // rounds run so far (repeats per config, at most)
    PrecisionStatus status;
    size_t added = 0;     // trials of the next round
    std::string stop;     // why no round follows; "" when one does
    std::string summary;  // the look in a line (precision_summary, check_summary)
    // At the first look, when the budget looks too small for the target at
    // the configs' present spread: by how much, and what would do; else "".
    std::string forecast;
  };
  using LookCallback = std::function<void(const Look&)>;

  // Runs the jobs, at most request.jobs at a time, committing each outcome
  // (stamped with the request's scheduler ids); returns false when
  // Ctrl-C stopped it. With measure.precision, further rounds follow (of
  // the baseline and the configs not yet precise) until every config is
  // precise or clearly apart, or budget_s is spent; on_look sees each look.
  // The run's status is set to finished or interrupted. callbacks.on_finish,
  // when set, sees each outcome after it is committed.
  bool execute(std::vector<TrialJob> jobs, RunnerCallbacks callbacks,
               const LookCallback& on_look = {});

  // Adds trials to the run and runs every pending one (tune's rounds);
  // false when Ctrl-C stopped it.
  bool run_more(const std::vector<db::TrialPlan>& rows, RunnerCallbacks callbacks);
  // Marks the run finished or interrupted.
  void finish(bool complete);
  // A race's leader in a round (tune on time to target): adaptive capping
  // never caps it, nor the others of its round before its time (Capping).
  void set_round_leader(int64_t round, int64_t config) { round_leaders_[round] = config; }

  // How these jobs take turns (plan_interleave over their configs), and
  // the GPUs they run on (assign_gpus: UsageError for --gpus or --jobs that
  // cannot be met).
  const InterleavePlan& interleave_plan(const std::vector<TrialJob>& jobs);

 private:
  using Clock = std::chrono::steady_clock;
  bool run_jobs(std::vector<TrialJob> jobs, RunnerCallbacks callbacks);
  // "auto" on a GPU: one short worker of the jobs' largest batch, not
  // recorded, whose footprint on the device sets the window (gpu_window);
  // once a run. False when interrupted.
  bool probe_gpu_footprint(const std::vector<TrialJob>& jobs, const RunnerCallbacks& callbacks);
  // measure.target.cap's adaptive capping, with the best times of rounds
  // whose trials finished before (a resumed run).
  Capping capping();
  // Throws UsageError when a trial of the run is of another plugin build
  // than the one loaded now: a rebuilt plugin may measure something else.
  void check_plugin_build(int64_t run_id);
  // A check resumed after it finished: the rounds it had judged then, kept in
  // its stored spec (check.hpp's CheckOptions::judged_rounds).
  void keep_first_judgement(const db::SweepRecord& found);
  // The build that runs a config: the check's build its "build" key names,
  // else the run's plugin.
  const PluginInfo& info_for(const Json& config) const;
  // What the worker gets as its config: without a check's build key, with
  // the build's selection.
  Json worker_config(const Json& config) const;
  std::vector<db::TrialPlan> rows_of(const std::vector<PlannedTrial>& plan) const;
  // The configs of jobs as planned (a check's build key included), for the
  // interleave plan and the footprint probe: two builds of one config are
  // two configs that take turns.
  static std::vector<Json> planned_configs(const std::vector<TrialJob>& jobs);
  // After a round: the configs done (precise, apart, decided) so far.
  PrecisionStatus look_status(int look, const std::set<int64_t>& done);
  bool precision_rounds(const RunnerCallbacks& callbacks, const LookCallback& on_look,
                        Clock::time_point started, double first_round_s);

  SweepSpec spec_;
  PluginInfo info_;
  RunRequest request_;
  std::optional<db::Store> store_;
  db::SweepRecord record_;
  std::optional<InterleavePlan> interleave_;
  std::optional<int> gpu_window_;             // the footprint probe's window, once measured
  std::map<int64_t, int64_t> round_leaders_;  // round -> its race's leader (config index)
  std::optional<db::RunLock> lock_;
  bool started_instead_ = false;
};

}  // namespace gpusweep::host
