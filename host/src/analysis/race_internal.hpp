// The race's parts that need each other (race.hpp's replay and its helpers):
// the trials as evidence (race_evidence.cpp), the constraints
// (race_constraints.cpp) and the model's proposals (race_proposals.cpp), for
// the replay's steps (race_state.hpp). Internal to the analysis layer.
#pragma once

#include "analysis/race.hpp"
#include "analysis/time_to_target.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host::detail {

using Outcome = RaceTrial::Outcome;

// A config's trials, split into racing and confirmation rounds.
struct Arm {
  std::vector<const RaceTrial*> trials;  // racing rounds, in round order
  std::vector<const RaceTrial*> confirm;
};

// The trials as evidence (race_evidence.cpp).
std::map<uint64_t, double> fit_levels(const std::map<uint64_t, Arm>& arms, int64_t last);
std::vector<RunSamples> runs_of(const std::vector<const RaceTrial*>& trials, int64_t last);
std::vector<TargetTime> times_of(const std::vector<const RaceTrial*>& trials, int64_t last);
std::optional<RatioEstimate> speed_of(const std::optional<TimeRatio>& r);
int paired_rounds(const std::vector<RunSamples>& x, const std::vector<RunSamples>& y);
std::string infeasible_reason(const Arm& arm, int64_t last);

// The constraints (race_constraints.cpp).
bool noisy(const Constraint& c);
bool needs_reference(const RaceOptions& options);

// A constraint's standing for a config from its ok trials up to round `last`.
struct ConstraintStanding {
  std::string infeasible;  // why it is shown (or, deterministic, seen) to break one
  bool point_ok = true;    // every estimate meets its constraint (it may lead)
};

ConstraintStanding judge_constraints(const TuneSpace& space, uint64_t c, const Arm& arm,
                                     const Arm* baseline, bool is_baseline,
                                     const std::vector<Constraint>& constraints, int64_t last,
                                     double level);
std::set<std::pair<size_t, size_t>> constraint_avoid(const TuneSpace& space,
                                                     const std::set<uint64_t>& breaking,
                                                     const std::set<uint64_t>& meeting,
                                                     const std::map<uint64_t, Arm>& arms,
                                                     int64_t last);

// The model's proposals (race_proposals.cpp).
std::vector<uint64_t> propose(const TuneSpace& space, const std::map<uint64_t, double>& levels,
                              const std::vector<std::vector<size_t>>& failed_digits,
                              const std::set<uint64_t>& tried,
                              const std::vector<std::vector<size_t>>& oom_digits,
                              const std::set<std::pair<size_t, size_t>>& avoid, uint64_t leader,
                              size_t count, uint64_t seed, int64_t look);

}  // namespace gpusweep::host::detail
