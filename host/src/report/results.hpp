// The results table of one sweep: settings that vary, status, throughput with
// spread, step time, peak memory, quality, and the ratio to the baseline.
#pragma once

#include "analysis/stored.hpp"
#include "analysis/time_to_target.hpp"
#include "report/output.hpp"
#include "spec/sweep.hpp"

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
std::map<int64_t, ConfigFigures> config_figures(db::Store& store, const db::SweepRecord& sweep,
                                                const std::vector<StoredTrial>& trials);

// A run's trials as stored (every field) and its configs' figures.
struct RunResults {
  std::vector<StoredTrial> trials;
  std::map<int64_t, ConfigFigures> figures;
};
RunResults read_results(db::Store& store, const db::SweepRecord& sweep);

// The table (or csv/json/md) of a run's trials: each trial's settings that
// vary, status and summary; its ratio to the baseline (its repeat's) and
// its config's figures (config_throughput, config_ratio, config_ci_low,
// config_ci_high, config_verdict in csv and json); its time to a
// measure.target when the run has one; and, in the note column (table and
// md), what the monitor could not measure (a measured window that held no
// NVML driver sample, where the utilisation figure is missing or rests on
// the host's coarser polls).
std::string results_table(const db::SweepRecord& sweep, const RunResults& run,
                          OutputFormat format = OutputFormat::table);

// One trial whole: its config and repeat, settings, status, error, its
// throughputs, the Python and packages it ran with (environment, when known)
// and its log's tail (stderr), for `gpusweep results --trial`.
std::string trial_details(const db::SweepRecord& sweep, const db::TrialRecord& trial,
                          const db::EnvironmentInfo* environment = nullptr);

}  // namespace gpusweep::host
