// One GPU per concurrent worker (`run --gpus LIST`, `--jobs N`): which GPUs
// this host may hand out, which of them a run uses, and whether it needs to.
// A worker is given its GPU as CUDA_VISIBLE_DEVICES, set before CUDA starts
// in the trial process, so that the trial's cuda:0 is that GPU.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// The GPUs this host may hand to workers, each as a CUDA_VISIBLE_DEVICES
// entry. When the host's own CUDA_VISIBLE_DEVICES is set (Slurm's binding, or
// the user's) it is the list: its entries, in its order, up to the first one
// that is not an index or a UUID (where CUDA stops reading it too); "" means
// none. Otherwise NVML's devices: by UUID where NVML gives one, which names
// the same device whatever CUDA's ordering, else by index.
std::vector<std::string> visible_gpus(const char* cuda_visible_devices,
                                      const std::vector<std::string>& nvml_uuids);

// --gpus LIST: "all", or positions in `visible` ("0,2", "1-3", "0,2-3"), in
// the order given. UsageError names a malformed or repeated entry, or one
// past the visible GPUs (and what is visible).
std::vector<std::string> select_gpus(const std::string& list,
                                     const std::vector<std::string>& visible);

// The ranks a trial's config asks for ("world_size", default 1): a
// data-parallel trial takes that many GPUs at once.
int64_t world_size_of(const nlohmann::json& config);

// The GPUs a trial on CUDA takes when `available` are handed out: one per
// rank, except that ranks all-reducing through Gloo (dp_backend "gloo")
// may share them, down to one GPU for all (NCCL refuses two ranks on one
// GPU; Gloo copies through host memory and does not care). So a one-GPU
// machine runs a Gloo data-parallel trial: the CUDA reducer, the comm
// hook's events and each rank's device sync, with both ranks on one GPU.
int64_t gpus_for_trial(const nlohmann::json& config, size_t available);

// What a run hands its workers.
struct GpuAssignment {
  // CUDA_VISIBLE_DEVICES entries the run hands out, one per running rank
  // (a trial of world_size N takes N of them, as one comma-separated value);
  // empty: workers inherit the host's environment (trials pick devices by
  // their config).
  std::vector<std::string> gpus;
  // Interleaved trials (several alive, one running at a time, --jobs 1) all
  // use the first ones: they take turns on them.
  bool shared = false;
  std::string note;  // what the run says about it; empty when nothing to say
};

// One GPU per concurrent worker (per rank of a data-parallel trial), when
// any trial runs on CUDA (a cuda device, or auto with a GPU visible) and
// --gpus was given, --jobs > 1, or a trial has world_size > 1 (UsageError
// when fewer GPUs are given than its ranks).
// `window` is the number of interleaved trials alive at once (1: none).
// UsageError, with the fix, for: --gpus with no GPU visible; more jobs than
// GPUs; a trial config naming cuda:N for N > 0 (each worker sees only its
// own GPU, as cuda:0); interleaving with --jobs > 1 on GPUs.
GpuAssignment assign_gpus(const std::optional<std::string>& gpus_option,
                          const std::vector<std::string>& visible, int jobs, int window,
                          const std::vector<nlohmann::json>& configs);

}  // namespace gpusweep::host
