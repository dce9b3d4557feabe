// Device monitoring during a trial: the host samples the worker process (CPU
// time and resident memory from /proc) and, when NVML is present and the
// trial runs on a GPU, that GPU (utilisation, memory, SM clock, temperature,
// power), found by the PCI bus id the worker reports: the device the trial
// uses whatever CUDA_VISIBLE_DEVICES or Slurm's binding renumbered. The GPU
// readings are device-wide (other processes on the device count too) and are
// named so (monitor_gpu_device_*); they are summarised over the measured
// phase only (the worker's "measure" phases), not setup, warmup or
// evaluation.
//
// Utilisation comes from the driver's own samples where NVML keeps them
// (nvmlDeviceGetSamples, one about every 1/6 s, stamped with the wall
// clock): a poll every kMonitorIntervalS gives a 0.6 s measured phase one or
// two readings, the driver's buffer three or four. Each poll fetches the
// samples new since the last one (the buffer is finite), and the monitor
// keeps those stamped inside a measured window, [start, end) on the wall
// clock when the "measure" phase opened and closed (several windows where
// trials take turns block by block). Where the windows hold no driver sample
// the trial says so (monitor_gpu_util_window_too_short, the windows'
// length) rather than leaving the figure silently missing; where the driver
// keeps no samples the polled readings stand in, as before. The trial
// process's own GPU memory (NVML's per-process figure, over its whole life)
// is recorded where the driver can name the worker's pid.
//
// Everything goes, with timelines, into `metrics` rows of kind 'stat' whose
// names start with monitor_. Sampling reads files and NVML only: the worker
// is never paused or signalled, so a monitored trial measures what an
// unmonitored one does.
#pragma once

#include "protocol/events.hpp"
#include "support/nvml.hpp"

#include <gpusweep/db/store.hpp>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

// How often the runner samples a worker.
constexpr double kMonitorIntervalS = 0.5;
// Timeline rows kept per series (longer trials keep every k-th sample).
constexpr size_t kMonitorTimelineMax = 600;

// The PCI bus id of the GPU a trial runs on, from its resolved config and
// the runtime its worker reported after create() (the CUDA devices it sees,
// numbered as the trial numbers them): cuda:N -> devices[N]; cuda, or auto
// with CUDA available -> devices[0]; cpu, auto without CUDA, or a runtime
// without devices -> none, and a CPU trial records no GPU figures.
std::optional<std::string> trial_gpu_bus_id(const nlohmann::json& config,
                                            const nlohmann::json& runtime);

// The wall clock in microseconds since the epoch: the clock NVML stamps its
// samples with (a steady clock would not compare with them).
uint64_t wall_clock_us();

// The clock NVML stamps its samples with. Its documentation says only "CPU
// timestamp in microseconds": the epoch's on the drivers seen so far, but
// some drivers are reported to stamp CLOCK_BOOTTIME, whose samples compared
// with wall-clock windows would never fall in one. Told from the newest
// stamp: within a day before (or a minute after) now on one of the clocks.
enum class DriverClock { wall = 0, boottime = 1, monotonic = 2, unknown = -1 };
// The clock `stamp_us` reads, given now on each (tests pass their own), and
// what to add to a stamp of it to get the wall clock (0 where unknown: the
// stamps are taken as the wall clock's).
std::pair<DriverClock, int64_t> driver_clock_of(uint64_t stamp_us, int64_t wall_us,
                                                int64_t boottime_us, int64_t monotonic_us);

class TrialMonitor {
 public:
  // config: the trial's resolved config, for the device it names.
  TrialMonitor(pid_t pid, const Nvml* nvml, nlohmann::json config);

  // A worker event: its runtime report names the GPU to sample (found in
  // NVML by bus id); "phase" events open and close the measured window.
  void on_event(const event::Event& e);
  // Samples NVML device index from now on (on_event, and tests).
  void use_gpu(unsigned index) { gpu_ = index; }
  // Whether readings from now on fall in the measured phase: opens or
  // closes a measured window at at_us (the wall clock; tests pass their own).
  void set_measuring(bool measuring, uint64_t at_us = wall_clock_us());

  // One reading; called every kMonitorIntervalS while the worker runs.
  void sample();
  // Fetches the driver's samples new since the last fetch (sample() does,
  // and the runner once more when the worker has ended: the end of the last
  // window is stamped after the last poll).
  void fetch_driver_samples();
  // Feeds one reading directly (tests, and sample() itself).
  void add_cpu_reading(double t_s, double cpu_s, std::optional<double> rss_bytes);
  void add_gpu_reading(const GpuSample& s);

  // The summary (and timeline) rows; usage is the worker's rusage from
  // wait4 when it was reaped (exact CPU time and peak RSS), wall_s its life.
  std::vector<db::MetricSample> metrics(const rusage* usage, double wall_s) const;

 private:
  pid_t pid_;
  const Nvml* nvml_;
  nlohmann::json config_;
  std::optional<unsigned> gpu_;
  bool measuring_ = false;
  std::vector<double> gpu_util_timeline_;  // every GPU reading, measured or not
  std::vector<double> gpu_mem_timeline_;
  double t0_;
  long ticks_;
  std::optional<double> last_t_, last_cpu_;
  std::vector<double> cpu_util_;  // per interval, in cores (1.0 = one core busy)
  // The intervals measured from one reading to the next, no window closed
  // between them.
  std::vector<double> cpu_util_measured_;
  bool measured_since_reading_ = false;
  double rss_peak_ = 0;
  std::vector<double> gpu_util_;
  std::vector<double> gpu_mem_;
  double gpu_mem_peak_ = 0;
  double clock_max_ = 0;
  bool throttled_ = false;
  std::optional<double> temperature_peak_, power_peak_;
  std::optional<double> clock_min_busy_;

  // The GPU's rows of metrics(), when a GPU was sampled.
  void gpu_metrics(std::vector<db::MetricSample>& m) const;
  // A measured window on the wall clock; no end while it is open.
  struct Window {
    uint64_t start_us;
    std::optional<uint64_t> end_us;
  };
  bool in_window(uint64_t t_us) const;
  // Keeps the fresh samples inside a window, advances seen_us past them, and
  // adds the gaps between consecutive stamps to gaps_s (when given).
  void keep_driver_samples(const std::vector<GpuTimedSample>& fresh, uint64_t& seen_us,
                           std::vector<GpuTimedSample>& kept, std::vector<double>* gaps_s);
  std::vector<Window> windows_;
  // The driver's samples that fall in a window (fetched ones outside any
  // are dropped), and what has been fetched so far (lastSeenTimeStamp).
  std::vector<GpuTimedSample> driver_util_, driver_memory_util_;
  uint64_t util_seen_us_ = 0, memory_util_seen_us_ = 0;
  bool driver_sampling_ = false;  // nvmlDeviceGetSamples answered for this GPU
  uint64_t last_fetch_us_ = 0;
  std::vector<double> driver_gaps_s_;  // between consecutive utilisation stamps
  // The driver's clock (DriverClock), found from its first samples, and
  // what turns its stamps into the wall clock's.
  std::optional<DriverClock> driver_clock_;
  int64_t driver_offset_us_ = 0;
  std::optional<double> process_memory_peak_;
};

}  // namespace gpusweep::host
