// What `gpusweep run` prints besides progress: the plan of a dry run and the
// one-line outcome of each trial.
#pragma once

#include "model/shard.hpp"
#include "model/sweep.hpp"

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

// "1.20k samples/s, cv 2.1%, accuracy 0.91", or the error.
std::string outcome_detail(const db::TrialOutcome& o);

}  // namespace gpusweep::host
