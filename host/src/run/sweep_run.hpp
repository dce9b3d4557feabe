// Recording a run: what `run`, `resume`, `run --shard`, `launch` and the
// one-config commands (tune-batch, diagnose) share.
#pragma once

#include "model/sweep.hpp"
#include "plugins/registry.hpp"

#include <gpusweep/db/store.hpp>

#include <vector>

namespace gpusweep::host {

// Planned trials as the rows a run starts with.
std::vector<db::TrialPlan> to_rows(const std::vector<PlannedTrial>& plan, const PluginInfo& info);

}  // namespace gpusweep::host
