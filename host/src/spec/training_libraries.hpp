// The Python libraries a training step's speed depends on most, in one
// list: named first wherever a trial's packages are shown (results, the
// report, history), and looked for by doctor in GPUSWEEP_PYTHON's
// environment.
#pragma once

#include <array>

namespace gpusweep::host {

inline constexpr std::array<const char*, 10> kTrainingLibraries = {
    "transformers", "lightning", "pytorch-lightning", "accelerate", "deepspeed",
    "peft",         "timm",      "diffusers",         "flash-attn", "triton"};

}  // namespace gpusweep::host
