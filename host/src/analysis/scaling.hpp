// Data-parallel scaling (world_size > 1): each config against the same
// settings at world_size 1, as a speed-up with its interval from the paired
// repeats (compare's ratio model) and a scaling efficiency (the speed-up per
// rank), beside the communication backward did not hide. Two pairings:
// weak scaling against the single process with the same batch_size (each
// rank as much work as it had alone: the global batch grows N-fold), and
// strong scaling against the single process with N x batch_size (the same
// global batch, split).
#pragma once

#include "analysis/compare.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct ScalingRow {
  const ConfigSamples* config = nullptr;  // world_size > 1
  std::string kind = "weak";              // "weak" or "strong" (see above)
  const ConfigSamples* single = nullptr;  // its settings at world_size 1; nullptr: none ran ok
  int64_t world_size = 1;
  // Global throughput over the single process's, with its interval at the
  // compare's level; none without a single-process config to pair with.
  std::optional<RatioEstimate> speedup;
  // speedup / world_size and its interval: 1 is perfect scaling.
  double efficiency = NAN;
  double low = NAN;
  double high = NAN;
  // The median over the repeats of the share of block time in all-reduce
  // that backward did not hide; and the bytes a step all-reduces.
  std::optional<double> comm_share;
  std::optional<double> allreduce_bytes_per_step;
  std::string note;  // why there is no efficiency, or what its interval cannot know
};

// Every config with world_size > 1, paired with the configs of the same
// settings (the dp_ settings aside: they do nothing at world_size 1) at
// world_size 1: a weak row (the same batch_size), a strong row (N x
// batch_size) where that config ran, one row saying what to add when
// neither did. Empty when no config has more than one rank.
std::vector<ScalingRow> scaling(const std::vector<ConfigSamples>& configs,
                                const CompareOptions& options = {});

}  // namespace gpusweep::host
