// The results table of one sweep: settings that vary, status, throughput with
// spread, step time, peak memory, quality, and the ratio to the baseline.
#pragma once

#include "analysis/stored.hpp"
#include "model/sweep.hpp"
#include "report/output.hpp"

#include <gpusweep/db/store.hpp>

#include <string>
#include <vector>

namespace gpusweep::host {

// Median throughput of the ok trials matching the baseline (the first config
// when the sweep names none); nullopt when none finished ok.
std::optional<double> baseline_throughput(const SweepSpec& spec,
                                          const std::vector<db::TrialRecord>& trials);

// The table (or csv/json/md) of a sweep's trials.
std::string results_table(const db::SweepRecord& sweep, const std::vector<db::TrialRecord>& trials,
                          OutputFormat format = OutputFormat::table);

}  // namespace gpusweep::host
