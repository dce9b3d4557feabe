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
//      memory pool (its transient bytes added to the trial's peak:
//      pool_bytes_for) and replays it once;
//   4. every later call replays it.
// A capture that fails (a sync, an allocation or a generator the graph
// cannot take) ends the trial `skipped` with CUDA's reason, never eager.
// Inputs: each step copies its batch into the static tensors step_input()
// returns (the same storage every step); a shape or dtype that changes ends
// the trial `skipped`. Outputs: tensors the captured step made keep their
// storage, so a loss assigned in the step is read after each replay.
// Host counters: a replay runs no host code, so what the captured step
// counted on the host (GradStep's optimiser steps and micro-batches) it adds
// through ReplayHooks::add, and every replay runs those additions again.
// A workload may hold more than one StepGraph (marl graphs each critic
// minibatch size and the actor update apart); stats_for() sums them.
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

// Host-side bookkeeping that a captured step owes each of its replays.
class ReplayHooks {
 public:
  // Adds `hook` to the hooks being recorded on this thread (a capture in
  // progress); outside a recording it does nothing.
  static void add(std::function<void()> hook);

  // While alive, add() on this thread records into `into`.
  class Recording {
   public:
    explicit Recording(ReplayHooks& into);
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;

   private:
    ReplayHooks* previous_;
  };

  // Runs every recorded hook once, in the order they were added.
  void run() const;
  size_t size() const { return hooks_.size(); }

 private:
  std::vector<std::function<void()>> hooks_;
};

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
  // For the live StepGraphs built on `settings` (a workload's settings_),
  // graphs on: cuda_graphs_captured (how many were captured),
  // cuda_graph_replays and cuda_graph_capture_s (summed over them),
  // zero_grad_in_place; empty with graphs off.
  static Metrics stats_for(const Settings& settings);
  // What the captured steps of the StepGraphs built on `settings` allocate
  // and free inside their private pools, summed (each pool is its own):
  // a replay allocates nothing, so the allocator's peak over measured
  // blocks leaves it out, and the trial's peak adds it. 0: none captured.
  static double pool_bytes_for(const Settings& settings);
  // Before measured blocks (TorchWorkload::begin_measurement), graphs on:
  // throws Skipped when a StepGraph on `settings` has run but is not yet
  // captured (warmup shorter than its capture), or when none has run at
  // all, so that no measured step runs eagerly under the setting.
  static void check_captured(const Settings& settings);

 private:
  void dry_run(const std::function<void()>& device_work);
  void warm_up(const std::function<void()>& device_work);
  void capture(const std::function<void()>& device_work);
  static double pool_bytes_for_locked(const Settings& settings);

  const Settings& settings_;
  std::string what_;
  bool enabled_ = false;
  int64_t calls_ = 0;
  bool captured_ = false;
  int64_t replays_ = 0;
  double capture_s_ = 0;
  double pool_bytes_ = 0;  // the capture's allocator peak above what stays allocated after it
  std::vector<torch::Tensor> inputs_;
  ReplayHooks hooks_;  // what the capture counted on the host
  struct Cuda;         // the graph and its side stream (CUDA builds)
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace gpusweep::torchkit
