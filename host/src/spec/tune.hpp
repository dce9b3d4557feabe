// `gpusweep tune`: the space a sweep file spans (its grid, whose numeric
// knobs may be ranges) as numbered configs, and the tune settings (objective,
// constraints, budget) a sweep file's "tune" object or the command line give.
#pragma once

#include "spec/manifest.hpp"
#include "spec/sweep.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// A grid entry that is a range rather than a list: {"min": 16, "max": 1024,
// "scale": "pow2"} (the powers of two in [min, max]) or {"min": 1e-4,
// "max": 1e-1, "scale": "log", "points": 7} (points values evenly spaced in
// log, 8 by default, rounded to integers when min and max are integers). The
// values in ascending order; UsageError naming source and grid.KEY otherwise.
Json expand_range(const std::string& source, const std::string& key, const Json& range);

// The space of a sweep: every combination of its grid's values, numbered as
// expand_configs numbers them (the first grid key varies slowest), so that a
// config's number is its config_index in the database.
class TuneSpace {
 public:
  TuneSpace(const SweepSpec& spec, const PluginManifest& manifest);

  uint64_t size() const { return size_; }
  size_t knobs() const { return names_.size(); }
  const std::string& name(size_t knob) const { return names_[knob]; }
  const std::vector<Json>& levels(size_t knob) const { return levels_[knob]; }

  // The level of each knob in config `index`, and back.
  std::vector<size_t> digits(uint64_t index) const;
  uint64_t index(const std::vector<size_t>& digits) const;
  // "batch_size=64 precision=bf16": the knobs' values of config `index`.
  std::string label(uint64_t index) const;
  // The resolved config (the manifest's defaults, the base, the levels).
  Json config(uint64_t index) const;
  // The index of a resolved config (nullopt when a knob's value is not one of
  // its levels).
  std::optional<uint64_t> index_of(const Json& config) const;
  // The knob whose larger values need more memory (batch_size, when it is a
  // knob with numbers), or -1: a config that ran out of memory rules out the
  // larger values at the same other levels.
  int memory_knob() const { return memory_knob_; }

 private:
  Json base_;
  std::vector<std::string> names_;
  std::vector<std::vector<Json>> levels_;
  std::vector<bool> real_;  // the knob's parameter is real: values as double
  uint64_t size_ = 1;
  int memory_knob_ = -1;
};

// What tune optimises and within what.
struct TuneSpec {
  // throughput | step_time | peak_memory | time_to_target (measure.target's)
  std::string objective = "throughput";
  // Whether the file named it: a sweep with a measure.target races on time
  // to target unless it did.
  bool objective_given = false;
  // The race is on time to measure.target (RaceOptions::time_to_target).
  bool to_target() const { return objective == "time_to_target"; }
  std::vector<std::string> constraints;  // as `best --constraint` takes them
  double budget_s = 1200;                // wall time, confirmation included
  double alpha = 0.05;                   // chance of dropping the true best, over the race
  int confirm_repeats = 3;               // fresh rounds of the winner, runner-up and baseline
  int max_live = 8;                      // candidates racing at once
  uint64_t seed = 0;                     // the model's draws (large spaces)
  // Written by `gpusweep tune` into the runs it starts: this run is a race
  // (what `report` shows), not a grid.
  bool race = false;

  // What defines the race, as stored with its run: the budget is left out,
  // so that a run resumes with more (or less) of it.
  Json to_json() const;
};

// The sweep file's "tune" object (missing: the defaults). UsageError naming
// source and tune.KEY for unknown keys and bad values.
TuneSpec parse_tune(const std::string& source, const Json& tune);

// Whether the run of this spec is a race (`gpusweep tune` wrote tune.race).
bool is_tune_run(const SweepSpec& spec);

// "20m", "90s", "1h", "1h30m" or a number of seconds; UsageError otherwise.
double parse_duration(const std::string& what, const std::string& text);

}  // namespace gpusweep::host
