// Data-parallel trials (world_size > 1): the process group of this trial's
// ranks and the gradient all-reduce that PyTorch's DistributedDataParallel
// does, built on c10d (Gloo on the CPU, NCCL on CUDA) so that every torchkit
// workload gets it without code of its own. The gpusweep worker starts the
// ranks, one process each, and tells them their rank and rendezvous
// (GPUSWEEP_DP_RANK, GPUSWEEP_DP_WORLD_SIZE, GPUSWEEP_DP_STORE); Settings
// reads them.
//
// What a rank does, and where:
// - Settings::prepare(module) broadcasts the module's parameters and buffers
//   from rank 0 (DDP's start), after moving it to the device.
// - GradStep all-reduces the gradients: c10d's Reducer in buckets of
//   dp_bucket_mb (the first one 1 MiB, as DDP), launched while backward
//   still runs, averaged over the ranks. With grad_accum, the micro-batches
//   before the last accumulate locally (DDP's no_sync) and the last one's
//   backward reduces their sum.
// - The workload shards its data by Settings::rank (a global batch of
//   world_size x batch_size, rank r taking its r-th slice) and says so with
//   Support::data_parallel; a workload that does not is skipped at
//   world_size > 1 rather than train every rank on the same batches.
#pragma once

#include <gpusweep/torchkit/settings.hpp>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace gpusweep::torchkit {

// Broadcasts the module's parameters and buffers from rank 0 to every rank
// of the trial's process group (created at the first call, which is the
// rendezvous: it fails after dp_timeout_s naming the ranks that did not
// come). Nothing at world_size 1.
void broadcast_from_first_rank(const Settings& settings, torch::nn::Module& module);

// One optimiser's gradients all-reduced as DDP does (see above). Built by
// GradStep when settings.world_size > 1, on the optimiser's parameters that
// require gradients, in the same order on every rank.
class GradientSync {
 public:
  GradientSync(const Settings& settings, torch::optim::Optimizer& optimizer);
  ~GradientSync();
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;

  // Around each micro-batch's backward: `last` is the optimiser step's last
  // micro-batch, whose backward reduces (the others accumulate locally).
  void before_backward(const torch::Tensor& loss, bool last);
  void after_backward(bool last);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// This process's data-parallel figures, for TorchWorkload::stats(); empty at
// world_size 1:
// - dp_world_size, dp_rank;
// - dp_allreduce_bytes_per_step: gradient bytes each optimiser step
//   all-reduces (every bucket of every GradientSync);
// - dp_buckets: the gradient buckets (of every GradientSync), each its own
//   all-reduce;
// - dp_synced_steps: backward passes that reduced;
// - dp_comm_exposed_s: seconds from the last bucket's launch (the end of
//   backward's compute) to backward's return, summed: the all-reduce time
//   not hidden behind backward (CUDA events on a GPU, the host clock on the
//   CPU). The host takes its share of the measured blocks' time.
Metrics data_parallel_stats();

// This rank's exposed all-reduce seconds of each reducing step in the
// host's measured windows, in step order (empty at world_size 1): the ranks
// run the same steps, so the host takes the least of the ranks' figures
// step by step (each rank's figure is the communication plus its wait for
// slower ranks that step; the least rank waited for none) and the rest as
// imbalance. Reported by TorchWorkload::stats_series() as
// dp_comm_exposed_steps_s.
std::vector<double> data_parallel_measured_steps();

}  // namespace gpusweep::torchkit
