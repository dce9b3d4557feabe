// The commands that run trials (run, resume, check, tune-batch, history
// --confirm): a run session (run/run_session.hpp) and what they print after
// it.
#pragma once

#include "cli/cli.hpp"
#include "report/check_view.hpp"
#include "run/confirm.hpp"
#include "run/run_session.hpp"

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace gpusweep::host {

// `run` and `resume`: runs the sweep's unfinished trials with progress, then
// prints the results table; the exit code (130 when interrupted).
// to_stderr: its lines go to stderr (a command whose stdout is JSON).
int run_sweep(const SweepSpec& spec, const PluginInfo& info, RunRequest request,
              bool to_stderr = false);

// A check and how to print its verdicts.
struct CheckRun {
  CheckJob job;
  CheckFormat format = CheckFormat::text;
  std::vector<std::string> files;  // --output
  bool inconclusive_fails = true;
  bool to_stderr = false;  // the run's lines (and the text table) to stderr
  std::function<void(const CheckRunReport&)> on_report;  // sees the verdicts
};
// Adds the build axis, runs the check with progress, prints its verdicts;
// the exit code (check_report's).
int run_check(CheckRun check);

// `check --show`: a stored check run's verdicts (--run, else the latest of
// the sweep named, else the latest) in format, and to each --output; the
// exit code the check gave.
int show_check(const po::variables_map& vm, CheckFormat format, bool inconclusive_fails);

// `history --confirm`: for each change point of the series, the check of
// confirm_job, then a line each: confirmed (the check calls the same
// change), not the build's, undecided, or why it cannot be re-measured.
// Returns how many were confirmed, or -1 when Ctrl-C stopped a check.
int confirm_change_points(const HistoryResult& result, const ConfirmOptions& options,
                          std::ostream& out);

}  // namespace gpusweep::host
