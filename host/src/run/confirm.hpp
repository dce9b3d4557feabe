// `history --confirm`: each change point's builds, the one before it and the
// one at it, measured again in one check before the change is called the
// build's.
#pragma once

#include "analysis/check.hpp"
#include "analysis/history.hpp"
#include "plugin_host/registry.hpp"
#include "run/run_session.hpp"

#include <string>
#include <vector>

namespace gpusweep::host {

struct ConfirmOptions {
  double tolerance = kDefaultCheckTolerance;
  double budget_s = kDefaultCheckBudgetS;
  bool fork_server = true;
  std::vector<std::string> plugin_paths;
};

// The check that re-measures the change between two points of a series: the
// later run's protocol (at least 3 repeats) on the series' config, base the
// build `before` ran and head the one `after` ran, read from their files
// (which must still hold those builds: the hash each run recorded), into
// the later run's database. UsageError saying why when it cannot be run.
CheckJob confirm_job(const Registry& registry, const HistoryPoint& before,
                     const HistoryPoint& after, const ConfirmOptions& options);

}  // namespace gpusweep::host
