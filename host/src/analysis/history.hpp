// `gpusweep history` (issue 57, item 3): every finished run of a workload is
// a point of a series, one series per machine and config, with the change
// points find_change_points (Otava's E-divisive with a t-test) finds on its
// log throughput, and the changes of environment or build marked on the
// point where they happen, so that a reader can tell a code change from a
// new torch, CUDA, driver or gpusweep.
//
// The build is a point's mark, not a series of its own: a series split at
// every build could never show the step a code change made.
#pragma once

#include "analysis/change_points.hpp"
#include "spec/manifest.hpp"

#include <gpusweep/db/store.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// What a point's environment says of the software under the step. Each
// field is the distinct values of the config's ok trials, joined by ", "
// (one, unless the environment changed within the run); "" unknown.
struct HistoryVersions {
  std::string torch;     // the LibTorch the workers loaded
  std::string cuda;      // the CUDA that LibTorch was built for
  std::string driver;    // the CUDA version the NVIDIA driver supports ("" none)
  std::string gpusweep;  // gpusweep's version
  std::string build;     // the plugin: "<version> <hash's first 8>"
  // A Python workload's or script's interpreter version, and the installed
  // packages it had imported by the end of its setup (transformers ...),
  // each by its version.
  std::string python;
  std::string interpreter;  // its path (not a history change: a path is not a version)
  std::map<std::string, std::string> packages;
};

// The software an environment row records (versions_of), and the packages'
// text for a line: the training libraries first (transformers, lightning,
// accelerate ...), then "+N more" where headline; all of them otherwise.
HistoryVersions versions_of(const db::EnvironmentInfo& e);
std::string packages_text(const std::map<std::string, std::string>& packages, bool headline);

// One config of one finished run.
struct HistoryPoint {
  std::string source;  // the database it came from
  int64_t run_id = 0;
  std::string run_name;
  std::string created_at;  // the run's, ISO 8601 UTC: the series' order
  std::string workload;
  std::string machine;       // machine_key of its ok trials (" + " between several)
  Json config;               // its resolved settings
  int64_t config_index = 0;  // its place in its run (series come in this order)
  std::string plugin_path;
  std::string plugin_hash;  // of the build its trials ran (", " between several)
  std::string unit;
  double throughput = 0;  // config_throughput: the median of its pooled blocks
  // Each ok repeat's median block throughput, for the interval and the
  // standard error.
  std::vector<double> repeat_medians;
  HistoryVersions versions;

  // Filled by history_series:
  // The 95% t interval of the geometric mean of repeat_medians (log scale,
  // n - 1 degrees of freedom); NaN with fewer than two repeats.
  double low = 0;
  double high = 0;
  // The standard error of that mean's log, the point's error for the
  // change-point search (0 with fewer than two repeats).
  double log_se = 0;
  // "torch 2.14.0 -> 2.15.0", ... : what differs from the series' previous
  // point (environment and build); none on a series' first point.
  std::vector<std::string> changes;
  // Set on the first point of a new level.
  std::optional<ChangePoint> change_point;
};

// One workload's config on one machine, its points oldest first.
struct HistorySeries {
  std::string workload;
  std::string machine;
  Json config;
  std::string unit;
  std::vector<HistoryPoint> points;
  std::vector<ChangePoint> change_points;  // indices into points
  // Fewer points than 2 * min_segment: no change point can be found yet.
  bool too_short = false;
};

struct HistoryFilter {
  std::string workload;          // "" every workload
  Json config = Json::object();  // settings every point's config must have
  std::string machine;           // text its machine key must contain; "" any
  // ISO 8601 UTC, a date or a date and time ("2026-11-28", "2026-11-28T20:10"):
  // runs created before it are left out; "" every run. Compared as text with
  // created_at, which sorts in time order.
  std::string since;
};

struct HistoryResult {
  // By workload, machine, then the config's place in its series' first run.
  std::vector<HistorySeries> series;
  // By workload: the settings whose values differ between its configs
  // before --config and --machine chose among them, which name a series.
  std::map<std::string, std::vector<std::string>> varying;
  ChangePointOptions options;
  std::string since;  // the filter's: runs before it are in no series
};

// --since's text as HistoryFilter::since: a UTC date, or a date and time to
// the minute or second with 'T' or a space between (as the listing shows a
// run's time). Throws UsageError, naming the form, on anything else.
std::string history_since(const std::string& when);

// Whether a point passes the filter.
bool matches(const HistoryPoint& point, const HistoryFilter& filter);

// The points that pass the filter as series (machine and canonical config
// JSON their key), each ordered by when its run was created (then run id),
// with intervals, marks and change points. Pure: no database.
HistoryResult history_series(std::vector<HistoryPoint> points, const HistoryFilter& filter,
                             const ChangePointOptions& options = {});

// Every config of every finished run of `workload` ("" any) in the
// database, a point each (diagnose's and tune-batch's runs are left out,
// by their stored kind: their trials are instrumented or a few steps
// long; so are history --confirm's checks, which re-measure old builds
// now). A check's two builds of a config are two points. A tune run gives its confirmation
// rounds, as compare reads it. source names the database in each point.
std::vector<HistoryPoint> read_history(db::Store& store, const std::string& source,
                                       const std::string& workload);

}  // namespace gpusweep::host
