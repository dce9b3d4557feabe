// Base class for LibTorch workloads: holds the applied common settings and
// implements the device synchronisation and statistics every plugin shares
// (peak memory, input wait and transfer time, loss reads, the fp16 scaler).
#pragma once

#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/grad_step.hpp>
#include <gpusweep/torchkit/input_pipeline.hpp>
#include <gpusweep/torchkit/runtime.hpp>
#include <gpusweep/torchkit/settings.hpp>
#include <gpusweep/torchkit/step_graph.hpp>
#include <gpusweep/workload.hpp>

#include <algorithm>
#include <functional>
#include <vector>

namespace gpusweep::torchkit {

class TorchWorkload : public Workload {
 public:
  explicit TorchWorkload(const TrialConfig& config, const Support& support = {})
      : settings_(Settings::apply(config, support)) {
    note_trial_settings(settings_);  // the matmul probe's device and dtype
  }
  // A window left open (a trial that failed in it) ends with the workload.
  ~TorchWorkload() override {
    if (in_window_) end_measured_window();
  }

  void synchronize() override { torchkit::synchronize(settings_.device); }

  Metrics stats() override {
    Metrics m = extra_stats();
    // Over the measured windows when the host marked them, else the trial's.
    m[stat::peak_memory_bytes] =
        windows_ > 0 ? measured_peak_ : peak_memory_bytes(settings_.device);
    // On CUDA, beside the allocated peak: the reserved peak, what a memory cap limits.
    if (const auto reserved = peak_reserved_bytes(settings_.device)) {
      m["peak_reserved_bytes"] = windows_ > 0 ? measured_reserved_peak_ : *reserved;
    }
    m["loss_reads"] = static_cast<double>(loss_reads_);
    m["os_threads"] = process_threads();
    if (read_any_) m["last_loss"] = last_loss_;
    if (pipeline_ != nullptr) {
      m[stat::input_wait_s] = pipeline_->wait_seconds();
      m["input_wait_cpu_s"] = pipeline_->wait_cpu_seconds();
      m["input_batches"] = static_cast<double>(pipeline_->batches());  // taken by the steps
      // On CUDA: the measured steps' copies to the device, grad_accum per step.
      pipeline_->transfers().add_stats(m, static_cast<double>(settings_.grad_accum));
    }
    // fp16 on CUDA: loss_scale and scaler_skipped_steps of the GradSteps
    // built on settings_, unless the workload reports its own.
    for (const auto& [name, value] : GradStep::scaler_stats(settings_)) m.emplace(name, value);
    for (const auto& [name, value] : GradStep::step_stats(settings_)) m.emplace(name, value);
    for (const auto& [name, value] : data_parallel_stats()) m[name] = value;  // world_size > 1
    for (const auto& [name, value] : phase_stats()) m[name] = value;  // diagnose trials only
    for (const auto& [name, value] : StepGraph::stats_for(settings_)) m[name] = value;  // graphs
    // The intra-op threads the trial ran with: data-parallel efficiency
    // pairs N ranks with one process of as many threads as each rank.
    m[stat::intra_op_threads] = static_cast<double>(at::get_num_threads());
    return m;
  }

  // At world_size > 1: this rank's exposed all-reduce per measured step,
  // which the host combines with the other ranks' step by step.
  Series stats_series() override {
    if (settings_.world_size <= 1) return {};
    return {{"dp_comm_exposed_steps_s", data_parallel_measured_steps()}};
  }

  // The peak starts over at each window and is taken at its end. Between
  // windows (an evaluation) the loaders stop: batches built then would serve
  // the next block from a backlog that training at full speed never has.
  // Host-to-device copies count inside the windows only (TransferTimes).
  void begin_measurement() override {
    StepGraph::check_captured(settings_);  // no measured step eager under cuda_graphs
    reset_peak_memory(settings_.device);
    if (pipeline_ != nullptr) pipeline_->resume();
    begin_measured_window();
    in_window_ = true;
  }
  void end_measurement() override {
    end_measured_window();
    in_window_ = false;
    if (pipeline_ != nullptr) pipeline_->pause();
    // A captured step's transient tensors live in its graph's pool, which
    // replays never allocate from again: the peak adds them.
    measured_peak_ = std::max(
        measured_peak_, peak_memory_bytes(settings_.device) + StepGraph::pool_bytes_for(settings_));
    if (const auto reserved = peak_reserved_bytes(settings_.device)) {
      measured_reserved_peak_ = std::max(measured_reserved_peak_, *reserved);
    }
    ++windows_;
  }

  // Between turns the input pipeline's loaders stop (interleaved execution).
  void pause_background() override {
    if (pipeline_ != nullptr) pipeline_->pause();
  }
  void resume_background() override {
    if (pipeline_ != nullptr) pipeline_->resume();
  }

  // CUDA events on the trial's device's current stream; no clock on the CPU
  // (DeviceTimer's host clock there would only repeat the harness's).
  void begin_device_timer() override {
    if (!settings_.device.is_cuda()) return;
    block_timer_ = std::make_unique<DeviceTimer>(settings_.device);
    block_timer_->start();
  }
  bool end_device_timer(double* seconds) override {
    if (!block_timer_) return false;
    block_timer_->stop();
    *seconds = block_timer_->total_seconds();
    block_timer_.reset();
    return true;
  }

  // The device's busy time from CUDA's activity records; none on the CPU.
  bool begin_device_busy() override { return busy_probe_.start(); }
  bool end_device_busy(double* busy_seconds) override {
    const std::optional<double> busy = busy_probe_.stop();
    if (busy) *busy_seconds = *busy;
    return busy.has_value();
  }

  static Json runtime() { return runtime_info(); }
  static const void* extension(const char* id) { return torchkit::extension(id); }

  const Settings& settings() const { return settings_; }

 protected:
  // Workload-specific counters added to stats().
  virtual Metrics extra_stats() { return {}; }

  // Call once per step with the step's loss: reads it back to the host (a
  // device sync) only every sync_every steps, as the setting says.
  void observe_loss(const torch::Tensor& loss) {
    if (settings_.should_sync(loss_steps_++)) {
      PhaseTimer sync(Phase::host_sync, settings_.device);
      last_loss_ = loss.item<double>();
      read_any_ = true;
      ++loss_reads_;
    }
  }

  // One supervised update: grad_accum micro-batches from pipeline, each one's
  // forward(inputs) under autocast (timed as the forward phase) and its
  // loss_of(output in fp32, targets) backpropagated through grad; then the
  // optimiser step and the loss read as sync_every says. Returns
  // batch_size x grad_accum samples. For workloads whose step is exactly
  // that (restoration, timeseries); others write their own loop.
  // Under cuda_graphs the grad_accum batches are taken first, each copied
  // into static inputs, and the forwards, backwards and the optimiser step
  // are graphed as one.
  template <class Forward, class Loss>
  StepResult supervised_step(InputPipeline& pipeline, GradStep& grad, Forward&& forward,
                             Loss&& loss_of) {
    if (graph_.enabled()) return graphed_supervised_step(pipeline, grad, forward, loss_of);
    torch::Tensor loss;
    for (int64_t m = 0; m < settings_.grad_accum; ++m) {
      loss = micro_batch_loss(pipeline.next_on_device(), forward, loss_of);
      grad.backward(loss);
    }
    grad.step();
    observe_loss(loss);
    return {/*samples=*/static_cast<double>(settings_.batch_size * settings_.grad_accum)};
  }

  // The step's device work (forward, loss, backward, optimiser step), run
  // as it is, or under cuda_graphs captured once and replayed
  // (step_graph.hpp): it must read its inputs through step_input() and no
  // value on the host (observe_loss goes after it), and the workload sets
  // Support::cuda_graphs.
  void graphed(const std::function<void()>& device_work) { graph_.run(device_work); }
  // A batch tensor the graphed work reads: the tensor itself, or under
  // cuda_graphs a static copy of it, the same storage every step.
  torch::Tensor step_input(size_t slot, const torch::Tensor& value) {
    return graph_.input(slot, value);
  }
  const StepGraph& step_graph() const { return graph_; }

  // One micro-batch's forward under autocast and its loss in fp32 (whatever
  // the autocast precision), timed as the forward phase.
  template <class Forward, class Loss>
  torch::Tensor micro_batch_loss(const Batch& batch, Forward& forward, Loss& loss_of) {
    PhaseTimer phase(Phase::forward, settings_.device);
    torch::Tensor output;
    {
      AutocastScope autocast(settings_);
      output = forward(batch[0]);
    }
    return loss_of(output.to(torch::kFloat), batch[1]);
  }

  template <class Forward, class Loss>
  StepResult graphed_supervised_step(InputPipeline& pipeline, GradStep& grad, Forward& forward,
                                     Loss& loss_of) {
    std::vector<Batch> batches;
    for (int64_t m = 0; m < settings_.grad_accum; ++m) {
      Batch batch = pipeline.next_on_device();
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i] = step_input(static_cast<size_t>(m) * batch.size() + i, batch[i]);
      }
      batches.push_back(std::move(batch));
    }
    graphed([&] {
      for (const Batch& batch : batches) {
        graphed_loss_ = micro_batch_loss(batch, forward, loss_of);
        grad.backward(graphed_loss_);
      }
      grad.step();
    });
    observe_loss(graphed_loss_);
    return {/*samples=*/static_cast<double>(settings_.batch_size * settings_.grad_accum)};
  }

  // Makes stats() report this pipeline's input wait, and pauses its loaders
  // between turns.
  void track(InputPipeline& pipeline) { pipeline_ = &pipeline; }

  Settings settings_;

 private:
  double measured_peak_ = 0;
  double measured_reserved_peak_ = 0;  // CUDA
  int64_t windows_ = 0;
  bool in_window_ = false;
  int64_t loss_steps_ = 0;
  int64_t loss_reads_ = 0;
  double last_loss_ = 0;
  bool read_any_ = false;
  InputPipeline* pipeline_ = nullptr;
  DeviceBusyProbe busy_probe_{settings_.device};  // begin/end_device_busy
  std::unique_ptr<DeviceTimer> block_timer_;      // the block being timed, on CUDA
  StepGraph graph_{settings_, "the step"};
  torch::Tensor graphed_loss_;  // supervised_step's last loss under cuda_graphs
};

}  // namespace gpusweep::torchkit
