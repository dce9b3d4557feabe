// `gpusweep tune`: a run whose trials come round by round from the race
// (analysis/race.hpp) instead of a whole grid. Every trial is an ordinary
// trial of the run in the database (its repeat is its round), so the run
// resumes after a kill like any other (the race is replayed from the
// trials), and compare, export and report read it as they read a sweep.
#pragma once

#include "analysis/constraints.hpp"
#include "analysis/race.hpp"
#include "run/sweep_run.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// What `gpusweep tune`'s command line says over the sweep file's "tune".
struct TuneOverrides {
  std::optional<std::string> objective;
  std::optional<std::vector<std::string>> constraints;
  std::optional<double> budget_s;
  std::optional<uint64_t> seed;
};

// The file's tune settings with the command line's on top, written into
// spec.tune; a sweep with a measure.target races on time to target unless an
// objective is named, and caps its trials by default (a capped trial is
// evidence). UsageError for measure.precision (tune decides its own rounds)
// and for a constraint that does not parse, before anything runs.
TuneSpec tune_settings(SweepSpec& spec, const TuneOverrides& overrides);

class TuneRun {
 public:
  // Finds the run to resume (request.resume) or starts one with the race's
  // first round. UsageError for a constraint that does not parse, a sweep
  // without a grid, or a baseline that is not in the space.
  TuneRun(const SweepSpec& spec, const PluginInfo& info, RunRequest request, TuneSpec tune);

  struct Look {
    const RaceStatus& status;
    double spent_s;   // the trials' wall time so far
    double budget_s;  // tune.budget_s
  };
  using LookCallback = std::function<void(const Look&)>;

  // Runs rounds until the race is decided and confirmed (or the budget
  // forces the decision); false when Ctrl-C stopped it.
  bool execute(RunnerCallbacks callbacks, const LookCallback& on_look);

  // The race as the database has it now.
  RaceStatus status();

  SweepRun& run() { return *run_; }
  const TuneSpace& space() const { return space_; }
  const TuneSpec& tune() const { return tune_; }
  uint64_t baseline() const { return options_.baseline; }

 private:
  // UsageError for measure.interleave > 1 with trials on a GPU: a waiting
  // trial keeps its device memory, so an OOM could be a neighbour's doing.
  void refuse_gpu_interleave() const;
  // A race on time to target: the leader of the round st plans, for capping.
  void note_leader(const RaceStatus& st);

  SweepSpec spec_;
  PluginInfo info_;
  TuneSpec tune_;
  TuneSpace space_;
  RaceOptions options_;
  std::unique_ptr<SweepRun> run_;
};

}  // namespace gpusweep::host
