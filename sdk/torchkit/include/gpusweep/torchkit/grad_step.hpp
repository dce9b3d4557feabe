// One optimiser step over grad_accum micro-batches, with the fp16 gradient
// scaler: backward() each micro-batch's loss, then step(). Under
// cuda_graphs the scaler's check stays on the device: the optimiser must be
// torchkit's FusedAdam or FusedAdamW, capturable, whose kernels skip the
// update where a gradient was not finite (otherwise the trial is skipped
// with the reason); the skipped steps are counted on the device. At
// world_size > 1 the last micro-batch's backward all-reduces the gradients
// as DistributedDataParallel does (data_parallel.hpp).
#pragma once

#include <gpusweep/torchkit/data_parallel.hpp>
#include <gpusweep/torchkit/settings.hpp>

#include <memory>

#include <torch/torch.h>

namespace gpusweep::torchkit {

class GradStep {
 public:
  GradStep(const Settings& settings, torch::optim::Optimizer& optimizer);
  ~GradStep();
  GradStep(const GradStep&) = delete;
  GradStep& operator=(const GradStep&) = delete;

  // Backpropagates one micro-batch's mean loss, divided by grad_accum so that
  // the accumulated gradient equals that of one batch grad_accum times larger
  // (and multiplied by the loss scale under fp16). At world_size > 1 the
  // step's last micro-batch then averages the gradients over the ranks: the
  // gradient of the global batch.
  void backward(const torch::Tensor& loss);

  // Unscales (fp16), skips the update if a gradient is not finite (fp16),
  // steps the optimiser, clears gradients as zero_grad_to_none says, updates
  // the loss scale. Returns whether the optimiser stepped (fp16 under
  // cuda_graphs: true, the skip being known on the device only).
  bool step();

  // Steps and micro-batches taken, those a CUDA graph replayed included
  // (cuda_graphs: the host ran them only in the warmup and the capture).
  int64_t optimizer_steps() const;
  int64_t micro_batches() const;
  // Steps the fp16 scaler skipped (under cuda_graphs a device read).
  int64_t skipped_steps() const;
  // The fp16 scaler's loss scale now (65536 at the start; halved at each
  // skipped step, doubled after 2000 steps in a row without one); 1 without
  // a scaler. A device read.
  double loss_scale() const;
  bool scaling() const { return scaling_; }
  // optimizer_steps, micro_batches, skipped_steps and param_norm, for stats().
  Metrics counters() const {
    return {{"optimizer_steps", static_cast<double>(optimizer_steps())},
            {"micro_batches", static_cast<double>(micro_batches())},
            {"skipped_steps", static_cast<double>(skipped_steps())},
            {"param_norm", param_norm()}};
  }
  // The L2 norm of all the optimiser's parameters together (a device read):
  // where training took the model, comparable across runs.
  double param_norm() const;

  // The fp16 scalers of the live GradSteps built on `settings` (a workload's
  // settings_; TorchWorkload::stats() reports them): loss_scale, the
  // smallest scale among them now, and scaler_skipped_steps, the optimiser
  // steps they skipped for a gradient that was not finite. Empty where none
  // scales (fp32, bf16, the CPU).
  static Metrics scaler_stats(const Settings& settings);
  // What the GradSteps built on `settings` did, for stats(): their
  // backward_passes_per_step (micro-batches over optimiser steps; the
  // fewest among them) and zero_grad_calls_per_step, what `plugins --check`
  // reads to see grad_accum and zero_grad_to_none act. Empty before a step.
  static Metrics step_stats(const Settings& settings);

 private:
  const Settings& settings_;
  torch::optim::Optimizer& optimizer_;
  void scaled_step_on_device();
  // Unscales the gradients in place, setting found_inf (float32 [1]) to 1
  // where one is not finite.
  void unscale(torch::Tensor& found_inf);
  // The scale halved after an overflow, doubled after kGrowthInterval steps without.
  void update_scale(const torch::Tensor& found_inf);

  bool scaling_ = false;             // fp16
  bool on_device_ = false;           // fp16 under cuda_graphs: no host read a step
  torch::Tensor scale_;              // float32 [1] on the device
  torch::Tensor growth_tracker_;     // int32 [1] on the device
  torch::Tensor found_inf_;          // on_device_: float32 [1], this step's check
  torch::Tensor skipped_on_device_;  // on_device_: float32 [1], steps skipped so far
  int64_t steps_ = 0;                // on_device_: steps taken or skipped
  int64_t micro_batches_ = 0;
  int64_t skipped_ = 0;
  std::unique_ptr<GradientSync> sync_;  // world_size > 1
};

}  // namespace gpusweep::torchkit
