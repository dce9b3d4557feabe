// `gpusweep tune`'s output: the progress of the race after each round, the
// winner with its confirmed ratios and a sweep-file snippet, and the race's
// history (which config was dropped when, on what evidence) for people and
// as JSON.
#pragma once

#include "analysis/race.hpp"
#include "spec/tune.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gpusweep::host {

// One line after a round: the leader and its level against the baseline, the
// candidates still racing, and the round's events (from index `from` of
// status.events: those not shown yet).
std::string race_progress(const TuneSpace& space, const RaceStatus& status, uint64_t baseline,
                          size_t from, double spent_s, double budget_s, bool to_target = false);

// The result: winner, its ratio to the baseline and to the runner-up from
// the confirmation rounds, the sweep-file snippet, and how the race went.
std::string render_tune(const TuneSpace& space, const RaceStatus& status, uint64_t baseline,
                        const SweepSpec& spec, const TuneSpec& tune);

nlohmann::json tune_json(const TuneSpace& space, const RaceStatus& status, uint64_t baseline,
                         const SweepSpec& spec, const TuneSpec& tune);

}  // namespace gpusweep::host
