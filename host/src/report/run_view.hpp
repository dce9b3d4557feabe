// What `gpusweep run` prints besides progress: the plan of a dry run, and
// the verdict of a run that ended.
#pragma once

#include "analysis/stored.hpp"
#include "spec/shard.hpp"
#include "spec/sweep.hpp"
#include "support/exit_code.hpp"

#include <gpusweep/db/store.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// The sweep's configs (numbered, the baseline marked) and its protocol;
// with a shard, how many of the trials it runs.
std::string plan_text(const SweepSpec& spec, const PluginManifest& manifest,
                      const std::vector<PlannedTrial>& plan,
                      const std::optional<Shard>& shard = std::nullopt);

// What the end of a run says besides its table: why it failed (the baseline
// or every trial ended failed: `run` exits kExitTrialsFailed), and what to
// change for verdicts worth trusting (configs to compare, fewer repeats than
// compare's kFewRepeats, without measure.precision). Each "" when there is nothing to
// say; else lines ending in a newline.
struct RunVerdict {
  std::string failure;
  std::string advice;
};
RunVerdict run_verdict(const SweepSpec& spec, const std::vector<StoredTrial>& trials);

}  // namespace gpusweep::host
