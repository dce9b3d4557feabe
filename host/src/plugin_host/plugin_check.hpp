// `gpusweep plugins --check`: validates one plugin file thoroughly (ABI,
// manifest schema, and a smoke run of every table function in a worker
// process) and reports every problem found with its fix.
#pragma once

#include "plugin_host/manifest_check.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::host {

struct PluginCheckReport {
  std::string path;
  nlohmann::json config;  // the smoke run's config (null when it did not run)
  std::vector<CheckItem> items;

  int count(CheckItem::Level level) const;
  int problems() const { return count(CheckItem::Level::problem); }
};

// Loads path in a worker process, checks its manifest, then smoke-runs
// create, `steps` x step, synchronize, evaluate, stats and destroy with the
// smallest config in a second worker (killed after timeout_s). selection
// sets the selecting parameters of a bridge (python's module): the
// selected workload is checked. A manifest that claims "deterministic" gets
// a second smoke run, whose metrics must equal the first's. Then the steps
// run again with the common settings the workload declares (grad_accum,
// channels_last, zero_grad_to_none, loader_workers) at values other than
// their defaults, and each must be seen to act in what the run's stats
// observed (backward_passes_per_step, ...), or is named as a problem.
PluginCheckReport check_plugin(const std::string& path, int64_t steps, double timeout_s,
                               const nlohmann::json& selection = nlohmann::json::object());

}  // namespace gpusweep::host
