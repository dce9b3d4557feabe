// CUDA graphs for a training step (the cuda_graphs setting): the step's
// device work (forward, loss, backward, optimiser) captured once into an
// at::cuda::CUDAGraph and replayed, one launch a step, from static input
// tensors. TorchWorkload holds one (graphed(), step_input()); a plugin opts
// in with Support::cuda_graphs.
//
// With cuda_graphs off, run() calls the step as it is and step_input()
// returns its tensor: the eager step is untouched. On:
//   1. the first call is a dry run, eager, that counts torchkit's host syncs
//      (every PhaseTimer of Phase::host_sync: loss reads, the fp16 scaler's
//      check, a plugin's .to(kCPU)); any makes the trial `skipped`, naming
//      them: a captured graph would replay the value read at capture;
//   2. the next kWarmupCalls - 1 calls run eagerly on a side stream (what
//      torch.cuda.graphs asks: cuBLAS workspaces, optimiser state and
//      autograd's buffers made before capture);
//   3. the next call captures the step on the side stream into a private
//      memory pool (counted in the trial's peak) and replays it once;
//   4. every later call replays it.
// A capture that fails (a sync, an allocation or a generator the graph
// cannot take) ends the trial `skipped` with CUDA's reason, never eager.
// Inputs: each step copies its batch into the static tensors step_input()
// returns (the same storage every step); a shape or dtype that changes ends
// the trial `skipped`. Outputs: tensors the captured step made keep their
// storage, so a loss assigned in the step is read after each replay.
#pragma once

#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/settings.hpp>
#include <gpusweep/workload.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace gpusweep::torchkit {

class StepGraph {
 public:
  // Eager calls before capture: the dry run and the side-stream warmup.
  static constexpr int64_t kWarmupCalls = 3;

  // `what` names the step in messages ("dqn's update").
  StepGraph(const Settings& settings, std::string what);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  bool enabled() const { return enabled_; }
  // Runs the step's device work: as it is when graphs are off, else as the
  // header says.
  void run(const std::function<void()>& device_work);
  // The static tensor for input `slot`, holding `value` (graphs off: value).
  torch::Tensor input(size_t slot, const torch::Tensor& value);

  // Once captured: true, and the replays since.
  bool captured() const { return captured_; }
  int64_t replays() const { return replays_; }
  // The replays of the live StepGraphs built on `settings` (a workload's
  // settings_): the steps GradStep's host counters never saw, which its
  // optimizer_steps() and micro_batches() add.
  static int64_t replays_for(const Settings& settings);
  // cuda_graphs_captured, cuda_graph_replays, cuda_graph_capture_s,
  // zero_grad_in_place (graphs on; empty off).
  Metrics stats() const;

 private:
  void dry_run(const std::function<void()>& device_work);
  void warm_up(const std::function<void()>& device_work);
  void capture(const std::function<void()>& device_work);

  const Settings& settings_;
  std::string what_;
  bool enabled_ = false;
  int64_t calls_ = 0;
  bool captured_ = false;
  int64_t replays_ = 0;
  double capture_s_ = 0;
  std::vector<torch::Tensor> inputs_;
  struct Cuda;  // the graph and its side stream (CUDA builds)
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace gpusweep::torchkit
