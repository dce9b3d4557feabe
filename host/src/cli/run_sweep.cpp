// run_sweep: what `run`, `resume` and `check` share once the request is built: the
// run's header line, live progress, the results table and the resume hint.
#include "cli/cli.hpp"
#include "cluster/slurm.hpp"
#include "report/results.hpp"
#include "report/run_view.hpp"
#include "run/live_blocks.hpp"
#include "run/progress.hpp"
#include "run/sweep_run.hpp"
#include "support/format.hpp"

#include <iostream>

namespace gpusweep::host {

RunnerCallbacks progress_callbacks(Progress& progress, LiveBlocks* live) {
  RunnerCallbacks cb;
  cb.on_start = [&progress, live](const TrialJob& j) {
    progress.started(j.trial_id, j.label);
    if (live != nullptr) live->started(j.trial_id);
  };
  cb.on_event = [&progress, live](const TrialJob& j, const Json& e) {
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

int run_sweep(const SweepSpec& spec, const PluginInfo& info, RunRequest request, bool to_stderr,
              const RunEnd& end) {
  std::ostream& out = to_stderr ? std::cerr : std::cout;
  const SlurmIds slurm = slurm_ids_from_env();
  request.scheduler_job_id = slurm.job_id;
  request.scheduler_task_id = slurm.task_id;
  SweepRun run(spec, info, request);
  if (run.started_instead_of_resuming()) {
    out << "no earlier run of '" << spec.name << "' to resume; starting one\n";
  }
  size_t finished_before = 0;
  std::vector<TrialJob> jobs = run.pending_jobs(&finished_before);
  if (request.shard) out << "shard " << request.shard->label() << " of ";
  out << "sweep '" << spec.name << "' (run " << run.record().id << ") into " << request.db_path
      << ": " << jobs.size() << " trials to run";
  if (finished_before > 0) out << ", " << finished_before << " already finished";
  out << ", " << request.jobs << (request.jobs == 1 ? " measuring at a time" : " measuring at once")
      << " (--jobs)\n";
  if (!jobs.empty()) {
    const InterleavePlan& plan = run.interleave_plan(jobs);
    out << plan.note << "\n";
    if (!spec.check.is_null() && plan.interleave.window < 2) {
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

  // Progress is a diagnostic: on stderr, as `run --help` says, so that
  // `run SWEEP > out` keeps the header and the table alone in out.
  Progress progress(jobs.size(), request.jobs, stderr_is_terminal(), stderr);
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
  if (end) return end(run, complete, out);
  const RunResults results = read_results(run.store(), run.record());
  out << "\n" << results_table(run.record(), results);
  if (!complete) {
    out << "interrupted: finished trials are saved; continue with: gpusweep resume " << spec.name
        << " --db " << request.db_path << "\n";
    return 130;
  }
  const RunVerdict verdict = run_verdict(spec, results.trials);
  if (!verdict.advice.empty()) out << verdict.advice;
  if (!verdict.failure.empty()) {
    out << verdict.failure;
    return kExitTrialsFailed;
  }
  return 0;
}

int run_check(CheckJob job) {
  make_check(job.spec, std::move(job.check), job.budget_s);
  job.request.builds = {{kBaseBuild, job.builds.base}, {kHeadBuild, job.builds.head}};
  RunEnd end = [&job](SweepRun& run, bool complete, std::ostream& out) {
    const CheckRunReport report =
        check_report(run.store(), run.record(), run.spec(), job.request.db_path, complete,
                     job.inconclusive_fails);
    write_check(report, job.format, job.files, out);
    if (job.on_report) job.on_report(report);
    return report.exit_code;
  };
  return run_sweep(job.spec, job.builds.base.info, job.request, job.to_stderr, end);
}

}  // namespace gpusweep::host
