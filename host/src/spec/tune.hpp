// `gpusweep tune`: the space a sweep file spans (its grid, whose numeric
// knobs may be ranges) as numbered configs, and the tune settings (objective,
// constraints, budget) a sweep file's "tune" object or the command line give.
#pragma once

#include "spec/manifest.hpp"
#include "spec/sweep.hpp"
#include "spec/tune_spec.hpp"

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

}  // namespace gpusweep::host
