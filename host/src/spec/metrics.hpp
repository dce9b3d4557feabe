// The metric vocabulary, defined once: what `best --objective/--constraint`,
// the claims of a sweep file and the comparisons can name, with its unit and
// direction. Where a value comes from (a trial's summary, its blocks, a
// statistic) is said here too; analysis/metric_values.hpp reads it from the records.
#pragma once

#include "spec/stats.hpp"

#include <string>
#include <vector>

namespace gpusweep::host {

// Stats a trial stores besides the plugin's own, for an exact re-diagnosis
// (`diagnose --db --trial`): the phase totals at the end of warmup (prefix +
// the plugin's stat name), and the matmul peak a diagnose trial measured on
// each kind of device (GFLOP/s).
inline constexpr char kWarmupEndPrefix[] = "warmup_end.";
inline constexpr const char* kMatmulPeakCuda = host_stat::matmul_peak_gflops_cuda;
inline constexpr const char* kMatmulPeakCpu = host_stat::matmul_peak_gflops_cpu;

enum class MetricUnit { rate, seconds, bytes, fraction, number };

struct Metric {
  const char* name;
  const char* meaning;
  MetricUnit unit;
  bool higher_is_better;
  bool in_summary;   // a per-trial value in the trial's summary (best, constraints)
  bool claimable;    // a sweep file's claim may name it
  const char* stat;  // otherwise: the trial statistic it is read from ("" when none)
};

// Every metric, in the order they are listed to users.
const std::vector<Metric>& metrics();

// The metric of that name, or nullptr.
const Metric* find_metric(const std::string& name);

// The names of the metrics with in_summary (constraints, best) or claimable
// (claims) set, in order.
std::vector<std::string> summary_metric_names();
std::vector<std::string> claim_metric_names();

}  // namespace gpusweep::host
