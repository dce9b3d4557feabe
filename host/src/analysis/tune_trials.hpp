// A tune run's trials as its race sees them (analysis/race.hpp): the
// objective per block (higher is better), each trial's outcome and its
// summary metrics (the race judges the constraints on them, round by round).
#pragma once

#include "analysis/constraints.hpp"
#include "analysis/race.hpp"
#include "analysis/stored.hpp"
#include "spec/tune.hpp"

#include <gpusweep/db/store.hpp>

#include <vector>

namespace gpusweep::host {

// The objective's values of one ok trial into r, higher is better, with each
// value's cycle: the block series compare reads (throughput), steps per
// second of each block (step_time), or one value, 1 / peak memory
// (peak_memory). None when the trial reports none.
void read_objective(db::Store& store, Objective objective, const db::TrialRecord& t, RaceTrial& r);

// Every trial of the run: a timeout or a crash is transient (retried once),
// any other failure the config's own. The second form takes the run's trials
// as read (TrialFields::all) and reads only their blocks.
std::vector<RaceTrial> race_trials(db::Store& store, int64_t sweep_id, const TuneSpec& tune);
std::vector<RaceTrial> race_trials(db::Store& store, const std::vector<StoredTrial>& trials,
                                   const TuneSpec& tune);

// The race's options for a sweep and its tune settings (the constraints
// parsed); UsageError when the sweep's baseline is not one config of its
// space, or a constraint does not parse.
RaceOptions race_options(const SweepSpec& spec, const TuneSpace& space, const TuneSpec& tune);

// The wall time the run's finished trials took, in seconds (what a tune
// budget counts, across resumes): each trial's own turns when it took turns.
TrialCosts trial_costs(const std::vector<StoredTrial>& trials);

}  // namespace gpusweep::host
