// Metric values read from trial records (spec/metrics.hpp names them).
#pragma once

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// A summary metric (one with in_summary) of a trial; nothing when the trial
// did not report it (no peak memory, no quality) or the name is no such metric.
std::optional<double> summary_metric(const db::Summary& s, const std::string& name);

// Every summary metric of every config: the median over its ok repeats,
// keyed by config index.
using ConfigMetrics = std::map<std::string, double>;
std::map<int64_t, ConfigMetrics> medians_by_config(const std::vector<db::TrialRecord>& trials);

}  // namespace gpusweep::host
