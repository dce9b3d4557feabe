// Worker and GPU sampling; see monitor.hpp.
#include "run/monitor.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "spec/device.hpp"
#include "spec/stats.hpp"
#include "support/procfs.hpp"

#include <nlohmann/json.hpp>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>
#include <tuple>

namespace gpusweep::host {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// Threshold under which an SM clock counts as dropped (of the trial's highest).
constexpr double kThrottleRatio = 0.9;
// Utilisation above which the GPU counts as busy (idle GPUs lower their clocks
// by design; that is not throttling).
constexpr double kBusyUtilPct = 50;
// Gaps between driver samples kept for its period: a few hundred say it; an
// hour-long trial would keep tens of thousands.
constexpr size_t kDriverGapsMax = 512;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double upper = v[mid];
  if (v.size() % 2 == 1) return upper;
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

void add_timeline(std::vector<db::MetricSample>& out, const std::string& name,
                  const std::vector<double>& values) {
  const size_t stride = values.size() / kMonitorTimelineMax + 1;
  for (size_t i = 0; i < values.size(); i += stride) {
    out.push_back({"stat", static_cast<int64_t>(i), name, values[i]});
  }
}

}  // namespace

std::optional<std::string> trial_gpu_bus_id(const nlohmann::json& config,
                                            const nlohmann::json& runtime) {
  const TrialDevice device = trial_device(config, runtime);
  const std::string bus = device.info.value("pci_bus_id", "");
  if (!device.cuda || bus.empty()) return std::nullopt;
  return bus;
}

uint64_t wall_clock_us() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::pair<DriverClock, int64_t> driver_clock_of(uint64_t stamp_us, int64_t wall_us,
                                                int64_t boottime_us, int64_t monotonic_us) {
  constexpr int64_t kBeforeUs = int64_t{86400} * 1000000;  // a buffer holds far less
  constexpr int64_t kAfterUs = int64_t{60} * 1000000;      // clock reads apart
  // The clock nearest the stamp among those it may read (boot time and the
  // monotonic clock differ by the time suspended, perhaps under a day).
  std::pair<DriverClock, int64_t> best{DriverClock::unknown, 0};
  int64_t best_distance = INT64_MAX;
  for (const auto& [clock, now_us] : {std::pair<DriverClock, int64_t>{DriverClock::wall, wall_us},
                                      {DriverClock::boottime, boottime_us},
                                      {DriverClock::monotonic, monotonic_us}}) {
    const int64_t d = now_us - static_cast<int64_t>(stamp_us);  // >= 0 but for clock reads
    if (d < -kAfterUs || d > kBeforeUs || std::llabs(d) >= best_distance) continue;
    best_distance = std::llabs(d);
    best = {clock, wall_us - now_us};
  }
  return best;
}

namespace {

int64_t clock_us(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

}  // namespace

TrialMonitor::TrialMonitor(pid_t pid, const Nvml* nvml, nlohmann::json config)
    : pid_(pid),
      nvml_(nvml),
      config_(std::move(config)),
      t0_(now_s()),
      ticks_(::sysconf(_SC_CLK_TCK)) {}

void TrialMonitor::on_event(const event::Event& e) {
  if (const auto* p = std::get_if<event::Phase>(&e)) {
    set_measuring(p->phase == Phase::measure);
  } else if (const auto* r = std::get_if<event::Runtime>(&e); r != nullptr && nvml_ != nullptr) {
    const auto bus = trial_gpu_bus_id(config_, r->runtime);
    if (bus) {
      if (auto index = nvml_->index_of_pci_bus_id(*bus)) use_gpu(*index);
    }
  }
}

void TrialMonitor::set_measuring(bool measuring, uint64_t at_us) {
  if (measuring && !measuring_) windows_.push_back({at_us, std::nullopt});
  if (!measuring && measuring_ && !windows_.empty()) windows_.back().end_us = at_us;
  if (!measuring) measured_since_reading_ = false;
  measuring_ = measuring;
}

void TrialMonitor::sample() {
  const std::string proc = "/proc/" + std::to_string(pid_);
  if (auto cpu = parse_proc_stat_cpu_seconds(read_text(proc + "/stat"), ticks_)) {
    add_cpu_reading(now_s() - t0_, *cpu, parse_status_rss_bytes(read_text(proc + "/status")));
  }
  if (nvml_ != nullptr && gpu_) {
    if (auto s = nvml_->sample(*gpu_)) add_gpu_reading(*s);
    fetch_driver_samples();
    if (auto bytes = nvml_->process_memory_bytes(*gpu_, pid_)) {
      process_memory_peak_ = std::max(process_memory_peak_.value_or(0), *bytes);
    }
  }
}

bool TrialMonitor::in_window(uint64_t t_us) const {
  return std::any_of(windows_.begin(), windows_.end(), [t_us](const Window& w) {
    return t_us >= w.start_us && (!w.end_us || t_us < *w.end_us);
  });
}

void TrialMonitor::keep_driver_samples(const std::vector<GpuTimedSample>& fresh, uint64_t& seen_us,
                                       std::vector<GpuTimedSample>& kept,
                                       std::vector<double>* gaps_s) {
  for (const auto& s : fresh) {
    // The period from every sample, in a window or not: a window too short
    // to hold one still learns how long the period was.
    if (gaps_s != nullptr && seen_us != 0 && s.time_us > seen_us &&
        gaps_s->size() < kDriverGapsMax) {
      gaps_s->push_back(1e-6 * static_cast<double>(s.time_us - seen_us));
    }
    seen_us = std::max(seen_us, s.time_us);
    // On the wall clock, as the windows are (the driver's own clock stays
    // for lastSeenTimeStamp).
    GpuTimedSample wall = s;
    wall.time_us = static_cast<uint64_t>(static_cast<int64_t>(s.time_us) + driver_offset_us_);
    // A sample is stamped no later than now, and a window yet to open starts
    // after now: one outside every window so far stays outside.
    if (in_window(wall.time_us)) kept.push_back(wall);
  }
}

void TrialMonitor::fetch_driver_samples() {
  if (nvml_ == nullptr || !gpu_) return;
  last_fetch_us_ = wall_clock_us();
  auto fresh = nvml_->driver_samples(*gpu_, GpuSampleKind::utilization, util_seen_us_);
  if (fresh && !fresh->empty() && !driver_clock_) {
    uint64_t newest = 0;
    for (const auto& s : *fresh) newest = std::max(newest, s.time_us);
    std::tie(driver_clock_, driver_offset_us_) =
        driver_clock_of(newest, static_cast<int64_t>(last_fetch_us_), clock_us(CLOCK_BOOTTIME),
                        clock_us(CLOCK_MONOTONIC));
  }
  if (fresh) {
    driver_sampling_ = true;
    keep_driver_samples(*fresh, util_seen_us_, driver_util_, &driver_gaps_s_);
  }
  if (auto fresh =
          nvml_->driver_samples(*gpu_, GpuSampleKind::memory_utilization, memory_util_seen_us_)) {
    keep_driver_samples(*fresh, memory_util_seen_us_, driver_memory_util_, nullptr);
  }
}

void TrialMonitor::add_cpu_reading(double t_s, double cpu_s, std::optional<double> rss_bytes) {
  if (last_t_ && t_s > *last_t_) {
    const double util = std::max(0.0, (cpu_s - *last_cpu_) / (t_s - *last_t_));
    cpu_util_.push_back(util);
    if (measured_since_reading_ && measuring_) cpu_util_measured_.push_back(util);
  }
  measured_since_reading_ = measuring_;
  last_t_ = t_s;
  last_cpu_ = cpu_s;
  if (rss_bytes) rss_peak_ = std::max(rss_peak_, *rss_bytes);
}

void TrialMonitor::add_gpu_reading(const GpuSample& s) {
  if (s.utilization_pct) gpu_util_timeline_.push_back(*s.utilization_pct);
  if (s.memory_used_bytes) gpu_mem_timeline_.push_back(*s.memory_used_bytes);
  if (!measuring_) return;
  const double util = s.utilization_pct.value_or(0);
  if (s.utilization_pct) gpu_util_.push_back(util);
  if (s.memory_used_bytes) {
    gpu_mem_.push_back(*s.memory_used_bytes);
    gpu_mem_peak_ = std::max(gpu_mem_peak_, *s.memory_used_bytes);
  }
  if (s.sm_clock_mhz) {
    clock_max_ = std::max(clock_max_, *s.sm_clock_mhz);
    if (util >= kBusyUtilPct) {
      clock_min_busy_ = std::min(clock_min_busy_.value_or(*s.sm_clock_mhz), *s.sm_clock_mhz);
      if (*s.sm_clock_mhz < kThrottleRatio * clock_max_) throttled_ = true;
    }
  }
  if (s.temperature_c)
    temperature_peak_ = std::max(temperature_peak_.value_or(0), *s.temperature_c);
  if (s.power_w) power_peak_ = std::max(power_peak_.value_or(0), *s.power_w);
}

std::vector<db::MetricSample> TrialMonitor::metrics(const rusage* usage, double wall_s) const {
  std::vector<db::MetricSample> m;
  auto add = [&m](const std::string& name, double value) { m.push_back({"stat", 0, name, value}); };
  add(host_stat::monitor_interval_s, kMonitorIntervalS);
  add(host_stat::monitor_samples, static_cast<double>(cpu_util_.size()));
  double rss_peak = rss_peak_;
  if (usage != nullptr) {
    const double cpu_s =
        static_cast<double>(usage->ru_utime.tv_sec + usage->ru_stime.tv_sec) +
        1e-6 * static_cast<double>(usage->ru_utime.tv_usec + usage->ru_stime.tv_usec);
    add(host_stat::monitor_cpu_seconds, cpu_s);
    if (wall_s > 0) add(host_stat::monitor_cpu_util_mean, cpu_s / wall_s);
    rss_peak = std::max(rss_peak, static_cast<double>(usage->ru_maxrss) * 1024.0);  // KiB on Linux
  } else if (!cpu_util_.empty()) {
    add(host_stat::monitor_cpu_util_mean, mean(cpu_util_));
  }
  if (!cpu_util_.empty()) {
    add(host_stat::monitor_cpu_util_peak, *std::max_element(cpu_util_.begin(), cpu_util_.end()));
  }
  // The host's cores over readings measured throughout: what the measured
  // steps took, without loading, CUDA's start, warmup, probes or evaluations.
  if (!cpu_util_measured_.empty())
    add(host_stat::monitor_cpu_util_measured_mean, mean(cpu_util_measured_));
  if (rss_peak > 0) add(host_stat::monitor_rss_peak_bytes, rss_peak);
  add_timeline(m, host_stat::monitor_timeline_cpu_util, cpu_util_);
  if (gpu_) gpu_metrics(m);
  return m;
}

void TrialMonitor::gpu_metrics(std::vector<db::MetricSample>& m) const {
  if (gpu_util_timeline_.empty() && gpu_mem_timeline_.empty() && !driver_sampling_) return;
  auto add = [&m](const std::string& name, double value) { m.push_back({"stat", 0, name, value}); };
  add(host_stat::monitor_gpu_index, static_cast<double>(*gpu_));
  add(host_stat::monitor_gpu_samples_measured,
      static_cast<double>(std::max(gpu_util_.size(), gpu_mem_.size())));
  // The driver's samples in the windows (a window that closed after a
  // fetch is checked again), else the polled readings.
  std::vector<double> util, memory_util;
  for (const auto& s : driver_util_) {
    if (in_window(s.time_us)) util.push_back(s.value);
  }
  for (const auto& s : driver_memory_util_) {
    if (in_window(s.time_us)) memory_util.push_back(s.value);
  }
  if (driver_sampling_) {
    add(host_stat::monitor_gpu_util_samples, static_cast<double>(util.size()));
    if (!driver_gaps_s_.empty())
      add(host_stat::monitor_gpu_util_sample_period_s, median(driver_gaps_s_));
    if (driver_clock_)
      add(host_stat::monitor_gpu_sample_clock, static_cast<double>(*driver_clock_));
    if (util.empty() && !windows_.empty()) {
      double window_s = 0;
      for (const auto& w : windows_) {
        const uint64_t end = w.end_us.value_or(std::max(w.start_us, last_fetch_us_));
        window_s += 1e-6 * static_cast<double>(end - std::min(end, w.start_us));
      }
      add(host_stat::monitor_gpu_util_window_too_short, window_s);
    }
  }
  if (util.empty()) util = gpu_util_;
  if (!util.empty()) {
    add(host_stat::monitor_gpu_device_util_mean, mean(util));
    add(host_stat::monitor_gpu_device_util_peak, *std::max_element(util.begin(), util.end()));
  }
  if (!memory_util.empty()) add(host_stat::monitor_gpu_memory_util_mean, mean(memory_util));
  if (process_memory_peak_)
    add(host_stat::monitor_gpu_process_memory_peak_bytes, *process_memory_peak_);
  if (!gpu_mem_.empty()) add(host_stat::monitor_gpu_device_memory_used_peak_bytes, gpu_mem_peak_);
  if (clock_max_ > 0) {
    add(host_stat::monitor_gpu_sm_clock_max_mhz, clock_max_);
    if (clock_min_busy_) add(host_stat::monitor_gpu_sm_clock_min_busy_mhz, *clock_min_busy_);
    add(host_stat::monitor_gpu_throttled, throttled_ ? 1 : 0);
  }
  if (temperature_peak_) add(host_stat::monitor_gpu_temperature_peak_c, *temperature_peak_);
  if (power_peak_) add(host_stat::monitor_gpu_power_peak_w, *power_peak_);
  add_timeline(m, host_stat::monitor_timeline_gpu_device_util, gpu_util_timeline_);
  add_timeline(m, host_stat::monitor_timeline_gpu_device_memory_used_bytes, gpu_mem_timeline_);
}

}  // namespace gpusweep::host
