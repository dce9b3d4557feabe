// Device monitoring during a trial: the host samples the worker process (CPU
// time and resident memory from /proc) and, when NVML is present, the trial's
// GPU (utilisation, memory, SM clock, temperature, power). The readings are
// summarised, with a timeline, into `metrics` rows of kind 'stat' whose names
// start with monitor_. Sampling reads files and NVML only: the worker is never
// paused or signalled, so a monitored trial measures what an unmonitored one
// does.
#pragma once

#include "support/nvml.hpp"

#include <gpusweep/db/store.hpp>

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// How often the runner samples a worker.
constexpr double kMonitorIntervalS = 0.5;
// Timeline rows kept per series (longer trials keep every k-th sample).
constexpr size_t kMonitorTimelineMax = 600;

// utime + stime in seconds from the text of /proc/PID/stat.
std::optional<double> parse_proc_stat_cpu_seconds(const std::string& stat, long ticks_per_second);
// VmRSS in bytes from the text of /proc/PID/status.
std::optional<double> parse_status_rss_bytes(const std::string& status);

// The NVML device a trial's worker uses: cuda:N -> N, cuda or auto -> 0, cpu
// -> none, from the trial's resolved config (JSON).
std::optional<unsigned> gpu_for_config(const std::string& config_json);

class TrialMonitor {
 public:
  TrialMonitor(pid_t pid, const Nvml* nvml, std::optional<unsigned> gpu);

  // One reading; called every kMonitorIntervalS while the worker runs.
  void sample();
  // Feeds one reading directly (tests, and sample() itself).
  void add_cpu_reading(double t_s, double cpu_s, std::optional<double> rss_bytes);
  void add_gpu_reading(const GpuSample& s);

  // The summary (and timeline) rows; usage is the worker's rusage from
  // wait4 when it was reaped (exact CPU time and peak RSS), wall_s its life.
  std::vector<db::MetricSample> metrics(const rusage* usage, double wall_s) const;

 private:
  pid_t pid_;
  const Nvml* nvml_;
  std::optional<unsigned> gpu_;
  double t0_;
  long ticks_;
  std::optional<double> last_t_, last_cpu_;
  std::vector<double> cpu_util_;  // per interval, in cores (1.0 = one core busy)
  double rss_peak_ = 0;
  std::vector<double> gpu_util_;
  std::vector<double> gpu_mem_;
  double gpu_mem_peak_ = 0;
  double clock_max_ = 0;
  bool throttled_ = false;
  std::optional<double> temperature_peak_, power_peak_;
  std::optional<double> clock_min_busy_;
};

}  // namespace gpusweep::host
