// A run session: what `run`, `resume`, `check`, `tune-batch` and `history
// --confirm` share once their request is built. The run's header lines go
// to the caller's stream; progress (trials, rounds, notices) to stderr, so
// that `run SWEEP > out` keeps the header and the table alone in out; what
// follows the trials (the results table, a check's verdicts) is the
// caller's, through `end`.
#pragma once

#include "plugin_host/builds.hpp"
#include "run/runner.hpp"
#include "run/sweep_run.hpp"

#include <gpusweep/db/store.hpp>

#include <functional>
#include <ostream>
#include <string>

namespace gpusweep::host {

class Progress;
class LiveBlocks;

// The runner's callbacks that keep `progress` and, when given, the live
// view's file of the running trials' blocks up to date: each trial's start,
// events and end, and the runner's notices (run, resume, tune).
RunnerCallbacks progress_callbacks(Progress& progress, LiveBlocks* live = nullptr);

// Prints what follows the trials and returns the exit code; complete is
// false when Ctrl-C stopped the run.
using RunEnd = std::function<int(SweepRun& run, bool complete, std::ostream& out)>;

// Runs the sweep's unfinished trials (a new run, or the one request.resume
// or request.shard continues) with progress and precision rounds' look
// lines, its header to out; then end's exit code.
int run_session(const SweepSpec& spec, const PluginInfo& info, const RunRequest& request,
                std::ostream& out, const RunEnd& end);

// A check as `check` and `history --confirm` run it: the sweep (checked by
// validate_check_sweep, the builds resolved against it), the check's record
// (tolerances and builds) and its budget; request: the database, --resume,
// the fork server, the sweep file.
struct CheckJob {
  SweepSpec spec;
  BuildPair builds;
  CheckSpec check;
  double budget_s = 0;
  RunRequest request;
};
// Adds the build axis (make_check) and runs the check's session.
int run_check_session(CheckJob job, std::ostream& out, const RunEnd& end);

}  // namespace gpusweep::host
