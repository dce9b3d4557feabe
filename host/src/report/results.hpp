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

// Each config's figures as compare's JSON gives them (throughput, ratio,
// interval, verdict, notes: compare_view's records), and each repeat's
// paired ratio to the baseline's same repeat (the ratios whose geometric
// mean is compare's ratio), for the trials' rows. Empty when the run has no
// comparison (its baseline matches no config).
struct ConfigFigures {
  Json compared;                        // compare's record of the config
  std::map<int64_t, double> by_repeat;  // repeat -> its paired ratio
};
std::map<int64_t, ConfigFigures> config_figures(db::Store& store, const db::SweepRecord& sweep);

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
// monitoring note in the note column (table and md); with `figures`, each
// trial's ratio to the baseline (its repeat's) and its config's figures
// (config_throughput, config_ratio, config_ci_low, config_ci_high,
// config_verdict in csv and json).
std::string results_table(const db::SweepRecord& sweep, const std::vector<db::TrialRecord>& trials,
                          OutputFormat format = OutputFormat::table,
                          const std::map<int64_t, TargetTime>& targets = {},
                          const std::map<int64_t, std::string>& notes = {},
                          const std::map<int64_t, ConfigFigures>& figures = {});

// One trial whole: its config and repeat, settings, status, error, and its
// log's tail (stderr), for `gpusweep results --trial`.
std::string trial_details(const db::SweepRecord& sweep, const db::TrialRecord& trial);

}  // namespace gpusweep::host
