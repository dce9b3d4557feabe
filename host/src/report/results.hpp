// The results table of one sweep: settings that vary, status, throughput with
// spread, step time, peak memory, quality, and the ratio to the baseline.
#pragma once

#include "analysis/stored.hpp"
#include "analysis/time_to_target.hpp"
#include "model/sweep.hpp"
#include "report/output.hpp"

#include <gpusweep/db/store.hpp>

#include <map>
#include <string>
#include <vector>

namespace gpusweep::host {

// Median throughput of the ok trials matching the baseline (the first config
// when the sweep names none); nullopt when none finished ok.
std::optional<double> baseline_throughput(const SweepSpec& spec,
                                          const std::vector<db::TrialRecord>& trials);

// Each trial's time to a measure.target, by trial id (the statistics
// target_time_s and target_censored); empty for a run without a target.
std::map<int64_t, TargetTime> trial_target_times(db::Store& store, const db::SweepRecord& sweep,
                                                 const std::vector<db::TrialRecord>& trials);

// What the monitor could not measure about each trial, by trial id, as a
// note for its row: a measured window that held no NVML driver sample (the
// statistic monitor_gpu_util_window_too_short), where the utilisation
// figure is missing or rests on the host's coarser polls.
std::map<int64_t, std::string> trial_monitor_notes(db::Store& store, int64_t sweep_id);

// The table (or csv/json/md) of a sweep's trials; with `targets` (a run with
// measure.target), each trial's time to it; with `notes`, each trial's
// monitoring note in the note column (table and md).
std::string results_table(const db::SweepRecord& sweep, const std::vector<db::TrialRecord>& trials,
                          OutputFormat format = OutputFormat::table,
                          const std::map<int64_t, TargetTime>& targets = {},
                          const std::map<int64_t, std::string>& notes = {});

}  // namespace gpusweep::host
