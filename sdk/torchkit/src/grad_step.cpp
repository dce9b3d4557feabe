// Gradient accumulation and fp16 loss scaling; see grad_step.hpp.
#include <gpusweep/torchkit/grad_step.hpp>

#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/fused_adam.hpp>
#include <gpusweep/torchkit/step_graph.hpp>

#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_amp_update_scale.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

namespace gpusweep::torchkit {

namespace {
// torch.cuda.amp.GradScaler's defaults.
constexpr double kInitScale = 65536.0;
constexpr double kGrowthFactor = 2.0;
constexpr double kBackoffFactor = 0.5;
constexpr int64_t kGrowthInterval = 2000;

// The GradSteps that scale, for scaler_stats(): a workload's stats() finds
// its own by its settings, whether the plugin reports them or not.
std::mutex& scalers_mutex() {
  static std::mutex m;
  return m;
}
std::vector<const GradStep*>& scalers() {
  static std::vector<const GradStep*> all;
  return all;
}
// Every live GradStep, for step_stats() (under scalers_mutex()).
std::vector<const GradStep*>& grad_steps() {
  static std::vector<const GradStep*> all;
  return all;
}
}  // namespace

GradStep::GradStep(const Settings& settings, torch::optim::Optimizer& optimizer)
    : settings_(settings), optimizer_(optimizer) {
  // fp16 runs on CUDA only (Settings refuses it elsewhere); a test may
  // scale on the CPU, where the scaler's ops run too.
  scaling_ = settings.precision == Precision::fp16;
  if (scaling_) {
    auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(settings.device);
    scale_ = torch::full({1}, kInitScale, f32);
    growth_tracker_ = torch::zeros({1}, f32.dtype(torch::kInt));
    if (settings.cuda_graphs) {
      auto* fused = dynamic_cast<CapturableSteps*>(&optimizer);
      if (fused == nullptr || !fused->capturable()) {
        throw Skipped(
            "cuda_graphs with precision=fp16: the gradient scaler's check stays on the device "
            "only with torchkit's FusedAdam or FusedAdamW, capturable (their kernels skip an "
            "update whose gradients overflowed); this workload's optimiser is not one. Use "
            "bf16 or fp32");
      }
      on_device_ = true;
      found_inf_ = torch::zeros({1}, f32);
      skipped_on_device_ = torch::zeros({1}, f32);
      fused->skip_when(found_inf_);
    }
    std::lock_guard<std::mutex> lock(scalers_mutex());
    scalers().push_back(this);
  }
  if (settings.world_size > 1) sync_ = std::make_unique<GradientSync>(settings, optimizer);
  std::lock_guard<std::mutex> lock(scalers_mutex());
  grad_steps().push_back(this);
}

GradStep::~GradStep() {
  std::lock_guard<std::mutex> lock(scalers_mutex());
  for (auto* all : {&scalers(), &grad_steps()}) {
    all->erase(std::remove(all->begin(), all->end(), this), all->end());
  }
}

Metrics GradStep::step_stats(const Settings& settings) {
  std::lock_guard<std::mutex> lock(scalers_mutex());
  double passes = std::numeric_limits<double>::infinity();
  for (const GradStep* g : grad_steps()) {
    // Steps taken or skipped, without a device read.
    const int64_t tried = g->on_device_ ? g->steps_ : g->steps_ + g->skipped_;
    if (&g->settings_ != &settings || tried == 0) continue;
    passes = std::min(passes, static_cast<double>(g->micro_batches_) / static_cast<double>(tried));
  }
  if (!std::isfinite(passes)) return {};
  // GradStep::step() clears the gradients as zero_grad_to_none says, each step.
  return {{"backward_passes_per_step", passes}, {"zero_grad_calls_per_step", 1.0}};
}

Metrics GradStep::scaler_stats(const Settings& settings) {
  std::lock_guard<std::mutex> lock(scalers_mutex());
  double scale = std::numeric_limits<double>::infinity();
  int64_t skipped = 0;
  bool any = false;
  for (const GradStep* g : scalers()) {
    if (&g->settings_ != &settings) continue;
    scale = std::min(scale, g->loss_scale());
    skipped += g->skipped_steps();
    any = true;
  }
  if (!any) return {};
  return {{"loss_scale", scale}, {"scaler_skipped_steps", static_cast<double>(skipped)}};
}

void GradStep::backward(const torch::Tensor& loss) {
  PhaseTimer phase(Phase::backward, settings_.device);
  torch::Tensor l = loss;
  if (settings_.grad_accum > 1) l = l / static_cast<double>(settings_.grad_accum);
  // The scale stays float32, as PyTorch's GradScaler keeps it: an fp16 loss
  // times 65536 would overflow to inf and skip the first steps.
  if (scaling_) l = l.to(torch::kFloat) * scale_;
  const bool last = (micro_batches_ + 1) % settings_.grad_accum == 0;
  if (sync_) sync_->before_backward(l, last);
  l.backward();
  if (sync_) sync_->after_backward(last);
  ++micro_batches_;
  ReplayHooks::add([this] { ++micro_batches_; });  // a captured backward
}

// The scaler without a host read (cuda_graphs): the check sets found_inf_,
// which the fused kernels read to skip the update; the skip is counted and
// the scale updated on the device.
void GradStep::scaled_step_on_device() {
  found_inf_.zero_();
  unscale(found_inf_);
  optimizer_.step();
  skipped_on_device_.add_(found_inf_);
  update_scale(found_inf_);
}

void GradStep::unscale(torch::Tensor& found_inf) {
  std::vector<torch::Tensor> grads;
  for (auto& group : optimizer_.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
  }
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, scale_.reciprocal());
}

void GradStep::update_scale(const torch::Tensor& found_inf) {
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf, kGrowthFactor, kBackoffFactor,
                         kGrowthInterval);
}

bool GradStep::step() {
  PhaseTimer phase(Phase::optimizer, settings_.device);
  bool stepped = true;
  if (on_device_) {
    scaled_step_on_device();  // whether it stepped is known on the device only
  } else if (scaling_) {
    auto found_inf = torch::zeros({1}, scale_.options());
    unscale(found_inf);
    // One host read per optimiser step: the scaler must know whether to skip.
    {
      PhaseTimer sync(Phase::host_sync, settings_.device);
      stepped = found_inf.item<float>() == 0.0f;
    }
    if (stepped) optimizer_.step();
    update_scale(found_inf);
  } else {
    optimizer_.step();
  }
  // Under cuda_graphs the gradients stay where the captured backward writes
  // them: zeroed in place whatever zero_grad_to_none says.
  zero_grad(optimizer_, settings_.zero_grad_to_none && !settings_.cuda_graphs);
  if (stepped) {
    ++steps_;
    ReplayHooks::add([this] { ++steps_; });  // a captured step (its skips counted on the device)
  } else {
    ++skipped_;
  }
  return stepped;
}

int64_t GradStep::optimizer_steps() const { return steps_ - (on_device_ ? skipped_steps() : 0); }

int64_t GradStep::skipped_steps() const {
  if (!on_device_) return skipped_;
  return static_cast<int64_t>(skipped_on_device_.item<float>());
}

int64_t GradStep::micro_batches() const { return micro_batches_; }

double GradStep::param_norm() const {
  torch::NoGradGuard no_grad;
  double sum = 0;
  for (const auto& group : optimizer_.param_groups()) {
    for (const auto& p : group.params())
      sum += p.detach().to(torch::kDouble).square().sum().item<double>();
  }
  return std::sqrt(sum);
}

double GradStep::loss_scale() const { return scaling_ ? scale_.item<double>() : 1.0; }

}  // namespace gpusweep::torchkit
