// The statistics the host itself stores about a trial, defined once: rows of
// kind "stat" in the results' metrics table that gpusweep computes (from the
// worker's events, the supervisor's clock, the monitor's readings), beside
// the plugin's own stats, which it stores under the plugin's names. Writers
// take the names from host_stat::, readers look them up here, and docs/stats.md
// is this table (`gpusweep stats --format md`, a test keeps it current).
// Stats from older databases read the same: a name, once stored, never
// changes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpusweep::host {

// How a view combines a stat over a config's repeats.
enum class StatCombine {
  median,    // the median of the repeats' values
  max,       // the largest (a flag that any repeat set, a worst case)
  each,      // used per repeat (paired, or an input of another figure)
  survival,  // time to target: Kaplan-Meier over the repeats, censored ones as bounds
};

struct HostStat {
  const char* name;
  const char* unit;  // "s", "bytes", "fraction", "count", "flag", ...
  StatCombine combine;
  const char* meaning;
  bool series = false;  // one row per reading (at_step = its index), not one per trial
};

// X(name, unit, combine, meaning): every host-owned stat with a fixed name.
// Long by design: the table, one entry per stat.
#define GPUSWEEP_HOST_STATS(X)                                                                     \
  X(target_time_s, "s", survival,                                                                  \
    "training time until measure.target was reached (interpolated), or until the trial stopped "   \
    "when it was not: a lower bound")                                                              \
  X(target_censored, "flag", each,                                                                 \
    "1 when target_time_s is a lower bound (the target was not "                                   \
    "reached)")                                                                                    \
  X(target_diverged, "flag", each,                                                                 \
    "1 when the quality metric went NaN or infinite: never reached")                               \
  X(target_capped, "flag", each, "1 when measure.target.cap (adaptive capping) stopped the trial") \
  X(target_train_s, "s", median, "training time the trial had when it stopped")                    \
  X(target_cap_s, "s", each, "the cap adaptive capping set for the trial")                         \
  X(target_eval_s, "s", median, "time spent in evaluations, off the training clock")               \
  X(target_evaluations, "count", median, "evaluations run")                                        \
  X(target_steps, "count", median, "training steps when it stopped")                               \
  X(warmup_s, "s", median, "warmup's wall time (the transient, apart from the measured blocks)")   \
  X(first_step_s, "s", median, "the first step's time (compilation, lazy initialisation)")         \
  X(block_steps, "count", median, "steps per block the worker chose under measure.block_s")        \
  X(warmup_windows, "count", median, "windows measure.stable_warmup timed before warmup settled")  \
  X(warmup_stable, "flag", each, "1 when warmup settled, 0 when it hit its limit")                 \
  X(gpu_busy_share, "fraction", median,                                                            \
    "share of a warmup block's wall time the device ran kernels, copies or memsets (profiler)")    \
  X(memory_cap_device_bytes, "bytes", each, "measure.max_memory as the device allocator's cap")    \
  X(memory_cap_address_space_bytes, "bytes", each, "measure.max_memory as the address-space cap")  \
  X(memory_cap_device_fraction, "fraction", each, "the device cap as a fraction of its memory")    \
  X(device_time_fraction, "fraction", median,                                                      \
    "the device clock's block time over the host clock's (CUDA events against the wall)")          \
  X(clock_disagreeing_blocks, "count", max,                                                        \
    "blocks whose device and host times differ by over "                                           \
    "the tolerance")                                                                               \
  X(dp_comm_share, "fraction", median,                                                             \
    "data-parallel: share of block time in all-reduce that backward did not hide")                 \
  X(dp_imbalance_share, "fraction", median,                                                        \
    "data-parallel: share of block time the ranks waited for the slowest (imbalance)")             \
  X(quality_se, "quality", each, "the standard error of the quality metric's last evaluation")     \
  X(seed, "value", each, "the seed a repeat ran with (repeats after the first draw their own)")    \
  X(matmul_peak_gflops_cuda, "GFLOP/s", median,                                                    \
    "a diagnose trial's matmul benchmark on its CUDA device, in its autocast dtype")               \
  X(matmul_peak_gflops_cpu, "GFLOP/s", median, "a diagnose trial's matmul benchmark on the CPU")   \
  X(overlap_fraction, "fraction", max,                                                             \
    "share of the trial's running time spent alongside other trials (--jobs > 1)")                 \
  X(overlap_trials, "count", max, "how many other trials ran alongside it")                        \
  X(turn_s, "s", median, "time the trial ran in its turns (interleaved trials)")                   \
  X(monitor_interval_s, "s", each, "the monitor's polling interval")                               \
  X(monitor_samples, "count", each, "the monitor's readings of the trial's process")               \
  X(monitor_cpu_seconds, "s", median, "the process's CPU time (user and system)")                  \
  X(monitor_cpu_util_mean, "cores", median, "host cores the process used, over its life")          \
  X(monitor_cpu_util_peak, "cores", max, "the most host cores one reading saw")                    \
  X(monitor_cpu_util_measured_mean, "cores", median,                                               \
    "host cores over the readings inside measured blocks")                                         \
  X(monitor_rss_peak_bytes, "bytes", max, "the process's peak resident memory")                    \
  X(monitor_gpu_index, "index", each, "the GPU (NVML index) the trial ran on")                     \
  X(monitor_gpu_samples_measured, "count", each, "GPU readings inside measured blocks")            \
  X(monitor_gpu_util_samples, "count", each, "the driver's utilisation samples inside them")       \
  X(monitor_gpu_util_sample_period_s, "s", each, "the driver's sampling period")                   \
  X(monitor_gpu_sample_clock, "code", each, "which clock the driver's sample stamps read")         \
  X(monitor_gpu_util_window_too_short, "s", max,                                                   \
    "the measured window's length when it held no driver sample")                                  \
  X(monitor_gpu_device_util_mean, "fraction", median, "the device's utilisation, measured blocks") \
  X(monitor_gpu_device_util_peak, "fraction", max, "its highest reading")                          \
  X(monitor_gpu_memory_util_mean, "fraction", median, "the device's memory-bandwidth utilisation") \
  X(monitor_gpu_process_memory_peak_bytes, "bytes", max, "the process's peak device memory")       \
  X(monitor_gpu_device_memory_used_peak_bytes, "bytes", max, "the device's peak memory in use")    \
  X(monitor_gpu_sm_clock_max_mhz, "MHz", max, "the highest SM clock seen")                         \
  X(monitor_gpu_sm_clock_min_busy_mhz, "MHz", max, "the lowest SM clock seen while busy")          \
  X(monitor_gpu_throttled, "flag", max, "1 when the busy clock fell well below the highest")       \
  X(monitor_gpu_temperature_peak_c, "C", max, "the device's peak temperature")                     \
  X(monitor_gpu_power_peak_w, "W", max, "the device's peak power draw")

// Readings over the trial's life, one row each (at_step = the reading's index).
#define GPUSWEEP_HOST_SERIES(X)                                                                  \
  X(monitor_timeline_cpu_util, "cores", each, "host cores the process used, reading by reading") \
  X(monitor_timeline_gpu_device_util, "fraction", each, "the device's utilisation, by reading")  \
  X(monitor_timeline_gpu_device_memory_used_bytes, "bytes", each,                                \
    "the device's memory in use, by reading")

// The names, as constants: host_stat::target_time_s is "target_time_s".
namespace host_stat {
#define GPUSWEEP_STAT_NAME(name, unit, combine, meaning) inline constexpr char name[] = #name;
GPUSWEEP_HOST_STATS(GPUSWEEP_STAT_NAME)
GPUSWEEP_HOST_SERIES(GPUSWEEP_STAT_NAME)
#undef GPUSWEEP_STAT_NAME
}  // namespace host_stat

// One trial's host stats (the series aside), a field per entry of the
// table: a reader writes `stats.target_time_s`, which a misspelling cannot
// compile, where it wrote a name that a misspelling read as missing.
struct HostStatValues {
#define GPUSWEEP_STAT_FIELD(name, unit, combine, meaning) std::optional<double> name;
  GPUSWEEP_HOST_STATS(GPUSWEEP_STAT_FIELD)
#undef GPUSWEEP_STAT_FIELD

  // Sets the field of that stat; false when the table has no such stat (a
  // plugin's own, or a series).
  bool set(std::string_view name, double value);
  // Sets the field of the index-th stat of host_stats() (not a series).
  void set_at(size_t index, double value);
  // The field of that stat, or nullptr.
  const std::optional<double>* find(std::string_view name) const;
  // The stats that have a value, in the table's order.
  std::vector<std::pair<const char*, double>> present() const;
};

// Every host-owned stat with a fixed name, in the table's order, the series
// last.
const std::vector<HostStat>& host_stats();

// The entry of that name, or nullptr (a plugin's own stat, or a name made
// of a prefix: warmup_end.<stat>, dp_rank<r>_...).
const HostStat* find_host_stat(const std::string& name);

// "median", "max", "each", "survival".
const char* combine_name(StatCombine c);

}  // namespace gpusweep::host
