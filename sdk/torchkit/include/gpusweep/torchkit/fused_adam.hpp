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

namespace gpusweep::torchkit {

class FusedAdam final : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

class FusedAdamW final : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace gpusweep::torchkit
