// The stats a workload reports (Workload::stats(), the ABI's stats() JSON)
// that gpusweep reads by name, defined once: torchkit and the Python SDK
// write them under these names, the host's worker and views read them
// through these constants, `gpusweep stats --reported` lists them (and
// docs/stats.md), and a test checks the Python SDK against the table. A
// workload's other stats are stored under its own names and shown as they
// are. Header-only and free of LibTorch, as common_settings.hpp: the host
// reads it.
#pragma once

#include <vector>

// X(name, unit, by, meaning): `by` says who reports it: torchkit (a C++
// workload over torchkit, and the python plugin, which is one), the Python
// SDK, the workload itself, or gpusweep's worker (a data-parallel trial's
// figures, from every rank's).
#define GPUSWEEP_REPORTED_STATS(X)                                                             \
  X(peak_memory_bytes, "bytes", "torchkit",                                                    \
    "the trial's peak memory: the device allocator's peak over the measured windows, or the "  \
    "process's on the CPU")                                                                    \
  X(input_wait_s, "s", "torchkit, Python SDK",                                                 \
    "time the step waited for its input pipeline's batches, over the trial")                   \
  X(intra_op_threads, "count", "torchkit", "LibTorch's intra-op threads the trial ran with")   \
  X(flops_per_step, "FLOP", "the workload, Python SDK (scripts)",                              \
    "floating-point operations in one training step, for diagnose's achieved FLOP/s")          \
  X(host_syncs, "count", "torchkit, Python SDK",                                               \
    "diagnose: host reads of device values (the host_sync phase's spans), over the trial")     \
  X(phase_input_wait_s, "s", "torchkit, Python SDK", "diagnose: time waiting for input")       \
  X(phase_host_to_device_s, "s", "torchkit, Python SDK",                                       \
    "diagnose: time in host-to-device copies")                                                 \
  X(phase_forward_s, "s", "torchkit, Python SDK", "diagnose: time in the forward pass")        \
  X(phase_backward_s, "s", "torchkit, Python SDK", "diagnose: time in the backward pass")      \
  X(phase_optimizer_s, "s", "torchkit, Python SDK", "diagnose: time in the optimiser step")    \
  X(phase_host_sync_s, "s", "torchkit, Python SDK",                                            \
    "diagnose: time in host reads of device values")                                           \
  X(host_to_device_s_per_step, "s", "torchkit",                                                \
    "the device's time for one step's host-to-device copies (CUDA events)")                    \
  X(cuda_graphs_captured, "count", "torchkit, Python SDK",                                     \
    "cuda_graphs: how many step graphs were captured (0: the step ran eagerly)")               \
  X(dp_allreduce_bytes_per_step, "bytes", "torchkit",                                          \
    "data-parallel: gradient bytes each optimiser step all-reduces")                           \
  X(dp_comm_exposed_s, "s", "torchkit",                                                        \
    "data-parallel: this rank's all-reduce time backward did not hide, summed")                \
  X(dp_comm_exposed_measured_s, "s", "worker",                                                 \
    "data-parallel: the ranks' least exposed all-reduce time since warmup: the communication") \
  X(dp_imbalance_s, "s", "worker",                                                             \
    "data-parallel: the ranks' wait for the slowest beyond the communication")

namespace gpusweep {

// The names, as constants: stat::peak_memory_bytes is "peak_memory_bytes".
namespace stat {
#define GPUSWEEP_STAT_NAME(name, unit, by, meaning) inline constexpr char name[] = #name;
GPUSWEEP_REPORTED_STATS(GPUSWEEP_STAT_NAME)
#undef GPUSWEEP_STAT_NAME

// The diagnose phases' stats, in the order of torchkit's Phase and the
// Python SDK's PHASES.
inline constexpr const char* kPhases[] = {phase_input_wait_s, phase_host_to_device_s,
                                          phase_forward_s,    phase_backward_s,
                                          phase_optimizer_s,  phase_host_sync_s};
}  // namespace stat

struct ReportedStat {
  const char* name;
  const char* unit;
  const char* by;
  const char* meaning;
};

// Every entry of the table, in its order.
inline const std::vector<ReportedStat>& reported_stats() {
#define GPUSWEEP_STAT_ENTRY(name, unit, by, meaning) {#name, unit, by, meaning},
  static const std::vector<ReportedStat> table = {GPUSWEEP_REPORTED_STATS(GPUSWEEP_STAT_ENTRY)};
#undef GPUSWEEP_STAT_ENTRY
  return table;
}

}  // namespace gpusweep
