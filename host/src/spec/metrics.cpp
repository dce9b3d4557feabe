// The metric registry; see metrics.hpp.
#include "spec/metrics.hpp"
#include "spec/stats.hpp"

#include <gpusweep/stat_names.hpp>

namespace gpusweep::host {

const std::vector<Metric>& metrics() {
  static const std::vector<Metric> all = {
      {"throughput", "samples (the plugin's unit) per second, median of the blocks",
       MetricUnit::rate, true, true, true, ""},
      {"step_time", "seconds per training step, median of the blocks", MetricUnit::seconds, false,
       true, true, ""},
      {"peak_memory", "the trial's peak memory in bytes, as the plugin reports it",
       MetricUnit::bytes, false, true, true, ""},
      {"quality", "the plugin's quality metric after the trial", MetricUnit::number, true, true,
       true, ""},
      {"cv", "coefficient of variation of the block throughputs", MetricUnit::fraction, false, true,
       false, ""},
      {"input_wait", "share of the step spent waiting for input", MetricUnit::fraction, false, true,
       true, ""},
      {"transfer_time",
       "seconds per step copying batches host to device (CUDA events on the trial's device)",
       MetricUnit::seconds, false, false, true, stat::host_to_device_s_per_step},
      {"gpu_utilization",
       "mean utilisation of the trial's GPU over its measured phase (NVML's driver samples, "
       "else 0.5 s polls; device-wide)",
       MetricUnit::fraction, true, false, true, host_stat::monitor_gpu_device_util_mean},
      {"time_to_target",
       "seconds of training to measure.target (a claim's ratio: paired by seed, censored "
       "trials as bounds)",
       MetricUnit::seconds, false, false, true, host_stat::target_time_s},
  };
  return all;
}

const Metric* find_metric(const std::string& name) {
  for (const Metric& m : metrics()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

std::vector<std::string> summary_metric_names() {
  std::vector<std::string> out;
  for (const Metric& m : metrics()) {
    if (m.in_summary) out.emplace_back(m.name);
  }
  return out;
}

std::vector<std::string> claim_metric_names() {
  std::vector<std::string> out;
  for (const Metric& m : metrics()) {
    if (m.claimable) out.emplace_back(m.name);
  }
  return out;
}

}  // namespace gpusweep::host
