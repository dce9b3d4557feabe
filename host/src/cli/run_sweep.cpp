// run_sweep and run_check: a run session with what follows its trials, the
// results table and the resume hint, or a check's verdicts.
#include "cli/run_commands.hpp"
#include "cluster/slurm.hpp"
#include "report/results.hpp"
#include "report/run_view.hpp"

#include <iostream>

namespace gpusweep::host {

namespace {

// The scheduler's ids of this process, stamped on every trial it runs.
RunRequest with_slurm_ids(RunRequest request) {
  const SlurmIds slurm = slurm_ids_from_env();
  request.scheduler_job_id = slurm.job_id;
  request.scheduler_task_id = slurm.task_id;
  return request;
}

}  // namespace

int run_sweep(const SweepSpec& spec, const PluginInfo& info, RunRequest request, bool to_stderr) {
  request = with_slurm_ids(std::move(request));
  const RunEnd end = [&spec, &request](SweepRun& run, bool complete, std::ostream& out) -> int {
    const RunResults results = read_results(run.store(), run.record());
    out << "\n" << results_table(run.record(), results);
    if (!complete) {
      out << "interrupted: finished trials are saved; continue with: gpusweep resume " << spec.name
          << " --db " << request.db_path << "\n";
      return kExitInterrupted;
    }
    const RunVerdict verdict = run_verdict(spec, results.trials);
    if (!verdict.advice.empty()) out << verdict.advice;
    if (!verdict.failure.empty()) {
      out << verdict.failure;
      return kExitTrialsFailed;
    }
    return 0;
  };
  return run_session(spec, info, request, to_stderr ? std::cerr : std::cout, end);
}

int run_check(CheckRun check) {
  check.job.request = with_slurm_ids(std::move(check.job.request));
  const std::string db_path = check.job.request.db_path;
  const RunEnd end = [&check, &db_path](SweepRun& run, bool complete, std::ostream& out) {
    const CheckRunReport report = check_report(run.store(), run.record(), run.spec(), db_path,
                                               complete, check.inconclusive_fails);
    write_check(report, check.format, check.files, out);
    if (check.on_report) check.on_report(report);
    return report.exit_code;
  };
  std::ostream& out = check.to_stderr ? std::cerr : std::cout;
  return run_check_session(std::move(check.job), out, end);
}

}  // namespace gpusweep::host
