// The tune settings (objective, constraints, budget) a sweep file's "tune"
// object or the command line give, and a race's stored record of them.
#pragma once

#include "spec/objective.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::host {

using Json = nlohmann::json;

// What tune optimises and within what.
struct TuneSpec {
  // time_to_target races to measure.target
  Objective objective = Objective::throughput;
  // Whether the file named it: a sweep with a measure.target races on time
  // to target unless it did.
  bool objective_given = false;
  // The race is on time to measure.target (RaceOptions::time_to_target).
  bool to_target() const { return objective == Objective::time_to_target; }
  std::vector<std::string> constraints;  // as `best --constraint` takes them
  double budget_s = 1200;                // wall time, confirmation included
  double alpha = 0.05;                   // chance of dropping the true best, over the race
  int confirm_repeats = 3;               // fresh rounds of the winner, runner-up and baseline
  int max_live = 8;                      // candidates racing at once
  uint64_t seed = 0;                     // the model's draws (large spaces)
  // Written by `gpusweep tune` into the runs it starts: this run is a race
  // (what `report` shows), not a grid.
  bool race = false;

  // The file's "tune" object as written: what a run other than a race
  // stores (the settings of a later `gpusweep tune`, untouched).
  Json written = Json::object();

  // As stored with its run: for a race what defines it (the budget left
  // out, so that a run resumes with more or less of it), else written.
  Json to_json() const;
};

// The sweep file's "tune" object (missing: the defaults). UsageError naming
// source and tune.KEY for unknown keys and bad values.
TuneSpec parse_tune(const std::string& source, const Json& tune);

// "20m", "90s", "1h", "1h30m" or a number of seconds; UsageError otherwise.
double parse_duration(const std::string& what, const std::string& text);

}  // namespace gpusweep::host
