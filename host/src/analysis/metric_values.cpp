// Metric values; see metric_values.hpp.
#include "analysis/metric_values.hpp"

#include "spec/metrics.hpp"
#include "support/descriptive.hpp"

namespace gpusweep::host {

std::optional<double> summary_metric(const db::Summary& s, const std::string& name) {
  if (name == "throughput") return s.throughput_median;
  if (name == "step_time") return s.step_time_median_s;
  if (name == "cv") return s.throughput_cv;
  if (name == "peak_memory") return s.peak_memory_bytes;
  if (name == "quality") return s.quality;
  if (name == "input_wait") return s.input_wait_fraction;
  return std::nullopt;
}

std::map<int64_t, ConfigMetrics> medians_by_config(const std::vector<db::TrialRecord>& trials) {
  std::map<int64_t, std::map<std::string, std::vector<double>>> values;
  for (const auto& t : trials) {
    if (t.status != db::TrialStatus::ok || !t.summary) continue;
    auto& v = values[t.plan.config_index];
    for (const Metric& m : metrics()) {
      if (!m.in_summary) continue;
      if (auto x = summary_metric(*t.summary, m.name)) v[m.name].push_back(*x);
    }
  }
  std::map<int64_t, ConfigMetrics> out;
  for (const auto& [config, by_metric] : values) {
    for (const auto& [name, v] : by_metric) out[config][name] = quantile(v, 0.5);
  }
  return out;
}

}  // namespace gpusweep::host
