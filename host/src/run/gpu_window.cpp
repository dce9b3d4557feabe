// The window of trials that take turns on a GPU; see gpu_window.hpp.
#include "run/gpu_window.hpp"

#include "spec/stats.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace gpusweep::host {

namespace {

std::optional<double> stat(const std::vector<db::MetricSample>& metrics, const std::string& name) {
  std::optional<double> v;
  for (const auto& m : metrics) {
    if (m.kind == "stat" && m.at_step == 0 && m.name == name) v = m.value;
  }
  return v;
}

}  // namespace

GpuWindow gpu_window(const std::vector<db::MetricSample>& probe, const Nvml* nvml, size_t configs) {
  GpuWindow w;
  const auto footprint = stat(probe, host_stat::monitor_gpu_process_memory_peak_bytes);
  const auto index = stat(probe, host_stat::monitor_gpu_index);
  if (nvml == nullptr || !footprint || !index || !(*footprint > 0)) {
    w.note =
        "trials run one after another: the probe gave no GPU memory of its own process by NVML "
        "(no NVML, or a driver that lists no processes here), so how many fit is unknown; set "
        "measure.interleave to the number that fit on the device to take turns";
    return w;
  }
  const auto gpu = static_cast<unsigned>(*index);
  const auto info = nvml->device(gpu);
  const auto now = nvml->sample(gpu);
  if (!info || !now || !now->memory_used_bytes || !(info->memory_total_bytes > 0)) {
    w.note = "trials run one after another: NVML gave no memory figures of GPU " +
             std::to_string(gpu) + "; set measure.interleave to take turns";
    return w;
  }
  const double free = std::max(0.0, info->memory_total_bytes - *now->memory_used_bytes);
  const double usable = free * (1 - kGpuMemoryMargin);
  const auto fit = static_cast<size_t>(std::floor(usable / *footprint));
  const size_t most = std::min(static_cast<size_t>(kAutoInterleave), configs);
  w.window = static_cast<int>(std::max<size_t>(1, std::min(fit, most)));
  const std::string figures = "each trial holds about " + human_bytes(*footprint) + " of GPU " +
                              std::to_string(gpu) + " by NVML, " + human_bytes(free) + " free, " +
                              fixed(100 * kGpuMemoryMargin, 0) + "% of it kept free";
  if (w.window > 1) {
    w.note = "interleaved on the GPU: " + std::to_string(w.window) +
             " trials at a time take turns block by block (" + figures +
             "), so that drift of the machine hits every config alike";
  } else {
    w.note = "trials run one after another: two do not fit on the GPU (" + figures + ")";
  }
  return w;
}

MeasureSpec footprint_probe_measure(const MeasureSpec& sweep) {
  MeasureSpec m = sweep;
  m.warmup_steps = std::min<int64_t>(sweep.warmup_steps, 5);
  m.stable_warmup = false;
  m.min_warmup_s = 0;
  m.blocks = 5;
  m.block_s = 0.25;  // about 1.25 s measured: two or three of the monitor's samples
  m.min_block_s = 0;
  m.eval_every_blocks = 0;
  m.repeats = 1;
  m.precision = 0;
  m.interleave = 1;
  m.target.reset();
  return m;
}

}  // namespace gpusweep::host
