// Taking turns on a GPU under measure.interleave "auto": a trial waiting for
// its turn keeps its device memory, so as many trials take turns as fit. What
// one holds is measured, not guessed: one short probe worker of the sweep
// (its largest batch) runs first, and NVML's memory of that process (its CUDA
// context, the caching allocator's reservation, the libraries' workspaces;
// not only the allocator's peak) is set against the device's free memory
// less a margin. Without NVML's per-process figure the trials run one after
// another, and the run says why.
#pragma once

#include "spec/sweep.hpp"
#include "support/nvml.hpp"

#include <gpusweep/db/store.hpp>

#include <string>
#include <vector>

namespace gpusweep::host {

// Of the device's free memory, the share kept free (fragmentation, a later
// trial's larger peak, other processes).
constexpr double kGpuMemoryMargin = 0.2;

struct GpuWindow {
  int window = 1;    // trials taking turns at once
  std::string note;  // what was decided and why, for the run's output
};

// The window for `configs` distinct configs (at most kAutoInterleave) from
// the probe's monitor metrics (monitor_gpu_process_memory_peak_bytes,
// monitor_gpu_index) and the device's memory now, by NVML.
GpuWindow gpu_window(const std::vector<db::MetricSample>& probe, const Nvml* nvml, size_t configs);

// The probe's protocol: a short warmup and blocks sized by time, long
// enough (about a second measured) for the monitor to see the worker's
// steady footprint, without evaluations during the blocks.
MeasureSpec footprint_probe_measure(const MeasureSpec& sweep);

}  // namespace gpusweep::host
