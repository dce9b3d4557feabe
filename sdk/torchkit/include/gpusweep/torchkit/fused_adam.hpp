// Adam and AdamW stepping their parameters in one fused kernel call per
// device and dtype: ATen's _fused_adam_ / _fused_adamw_, what
// torch.optim.Adam(fused=True) runs (on the CPU a vectorised loop over each
// parameter that reads the gradient and the two moments once and writes the
// parameter and the moments once; on CUDA a multi-tensor kernel). LibTorch's
// own Adam instead runs about ten ATen ops a parameter, each a pass over
// memory.
//
// The same algorithm as torch::optim::Adam / AdamW (same options, same
// per-parameter state, saved and loaded by the same serialisation), so a
// checkpoint moves between them; the results agree within float rounding
// (the kernels compute the update in a different order). Where the kernels
// cannot run (a sparse gradient; a gradient or moments not laid out as their
// parameter, as moments loaded from a checkpoint of another layout can be)
// the step is LibTorch's own. A LossClosure is refused (no workload uses
// one).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <unordered_map>
#include <vector>

namespace gpusweep::torchkit {

// Capturable (CUDA graphs, the cuda_graphs setting): each parameter's step
// count lives in a float32 tensor on its device that the step increments
// there (one _foreach_add_ before the kernel, which reads it there), so that
// a captured step replayed N times counts N steps, as
// torch.optim.Adam(capturable=True) does. The host count (the state's
// step()) then counts only the steps taken eagerly and the capture. A step
// the fused kernels cannot take is refused (std::runtime_error) rather than
// taken by LibTorch's own, host-counted step.
struct DeviceSteps {
  bool on = false;
  std::unordered_map<void*, torch::Tensor> by_param;  // TensorImpl* -> step tensor
  torch::Tensor found_inf;  // skip_when(): read by every step's kernels, on the device
};

// What FusedAdam and FusedAdamW share for it.
class CapturableSteps {
 public:
  void capturable(bool on) { steps_.on = on; }
  bool capturable() const { return steps_.on; }
  // The fp16 scaler's check kept on the device (cuda_graphs): from now on
  // every step reads `found_inf` (float32 [1] on the parameters' device, 1
  // where a gradient was not finite) in its kernels, which then leave every
  // parameter, moment and device step count as they were. Capturable only
  // (a host step count cannot be taken back on the device).
  void skip_when(const torch::Tensor& found_inf);
  // The device step count of a parameter (capturable; undefined before its
  // first step).
  torch::Tensor device_step(const torch::Tensor& param) const;

 protected:
  DeviceSteps steps_;
};

class FusedAdam final : public torch::optim::Adam, public CapturableSteps {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
  // Sets each state's host count to its device count (a device read), so
  // that a checkpoint saves the steps replays took (capturable; nothing
  // otherwise).
  void sync_host_steps();
};

class FusedAdamW final : public torch::optim::AdamW, public CapturableSteps {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
  void sync_host_steps();
};

// The Adam of a workload that keeps LibTorch's own when eager: that one, or
// under cuda_graphs a FusedAdam, capturable (the same algorithm, its step
// counts on the device).
std::unique_ptr<torch::optim::Adam> adam_for_graphs(const std::vector<torch::Tensor>& params,
                                                    const torch::optim::AdamOptions& options,
                                                    bool cuda_graphs);

}  // namespace gpusweep::torchkit
