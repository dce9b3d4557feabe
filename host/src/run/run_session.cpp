// A run session; see run_session.hpp.
#include "run/run_session.hpp"

#include "run/live_blocks.hpp"
#include "run/progress.hpp"

#include <unistd.h>

#include <iostream>

namespace gpusweep::host {

namespace {

// The run's header: which run, how many trials, how they take turns.
void print_header(const SweepSpec& spec, const RunRequest& request, SweepRun& run,
                  const std::vector<TrialJob>& jobs, size_t finished_before, std::ostream& out) {
  if (run.started_instead_of_resuming()) {
    out << "no earlier run of '" << spec.name << "' to resume; starting one\n";
  }
  if (request.shard) out << "shard " << request.shard->label() << " of ";
  out << "sweep '" << spec.name << "' (run " << run.record().id << ") into " << request.db_path
      << ": " << jobs.size() << " trials to run";
  if (finished_before > 0) out << ", " << finished_before << " already finished";
  out << ", " << request.jobs << (request.jobs == 1 ? " measuring at a time" : " measuring at once")
      << " (--jobs)\n";
  if (!jobs.empty()) {
    const InterleavePlan& plan = run.interleave_plan(jobs);
    out << plan.note << "\n";
    if (spec.check && plan.interleave.window < 2) {
      // A check's repeats still pair base and head of one round, but their
      // blocks do not take turns: drift within a round reaches the ratio.
      out << "warning: this check's builds run one after another, not block by block (" << plan.note
          << "); set measure.interleave to 2 or more where the machine allows\n";
    }
    if (!plan.gpus.note.empty()) out << plan.gpus.note << "\n";
  }
  if (request.jobs > 1) {
    out << request.jobs
        << " trials at a time share this machine's cores, memory bandwidth and GPUs, "
           "so each one's timing includes the others; every trial records the share of "
           "its life it ran alongside others (stat overlap_fraction). For ratios "
           "between configs, run with --jobs 1\n";
  }
  out << std::flush;
}

}  // namespace

RunnerCallbacks progress_callbacks(Progress& progress, LiveBlocks* live) {
  RunnerCallbacks cb;
  cb.on_start = [&progress, live](const TrialJob& j) {
    progress.started(j.trial_id, j.label);
    if (live != nullptr) live->started(j.trial_id);
  };
  cb.on_event = [&progress, live](const TrialJob& j, const event::Event& e) {
    progress.event(j.trial_id, e);
    if (live != nullptr) live->event(j.trial_id, e);
  };
  cb.on_finish = [&progress, live](const TrialJob& j, db::TrialOutcome&& o) {
    if (live != nullptr) live->finished(j.trial_id);
    progress.finished(j.trial_id, o.status, outcome_detail(o));
  };
  cb.on_notice = [&progress](const std::string& notice) { progress.note(notice); };
  return cb;
}

int run_session(const SweepSpec& spec, const PluginInfo& info, const RunRequest& request,
                std::ostream& out, const RunEnd& end) {
  SweepRun run(spec, info, request);
  size_t finished_before = 0;
  std::vector<TrialJob> jobs = run.pending_jobs(&finished_before);
  print_header(spec, request, run, jobs, finished_before, out);
  Progress progress(jobs.size(), request.jobs, ::isatty(STDERR_FILENO) != 0, stderr);
  LiveBlocks live(request.db_path, run.record().id);
  if (!live.off_reason().empty()) {
    progress.note("serve will show no block strips for this run: " + live.off_reason());
  }
  const RunnerCallbacks cb = progress_callbacks(progress, &live);
  const bool ran_any = !jobs.empty();
  auto on_look = [&](const SweepRun::Look& look) {
    std::string line = "after " + std::to_string(look.rounds) + " rounds: " + look.summary;
    line += look.stop.empty() ? "; one more round of " + std::to_string(look.added) + " trials"
                              : "; done: " + look.stop;
    progress.grow(look.added);
    progress.note(line);
    if (!look.forecast.empty()) progress.note(look.forecast);
  };
  const bool complete = run.execute(std::move(jobs), cb, on_look);
  if (ran_any) progress.done();
  return end(run, complete, out);
}

int run_check_session(CheckJob job, std::ostream& out, const RunEnd& end) {
  make_check(job.spec, std::move(job.check), job.budget_s);
  job.request.builds = {{kBaseBuild, job.builds.base}, {kHeadBuild, job.builds.head}};
  return run_session(job.spec, job.builds.base.info, job.request, out, end);
}

}  // namespace gpusweep::host
