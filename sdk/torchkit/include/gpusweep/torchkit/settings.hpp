// The common settings (ARCHITECTURE.md, "Settings") applied the same way in
// every LibTorch plugin: device, batch size, precision, threads, seed,
// zero_grad_to_none, sync_every.
#pragma once

#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gpusweep::torchkit {

enum class Precision { fp32, bf16, fp16 };

const char* to_string(Precision p);

struct Settings {
  torch::Device device{torch::kCPU};
  int64_t batch_size = 1;
  Precision precision = Precision::fp32;
  int threads = 0;                // 0: LibTorch's default
  uint64_t seed = 0;
  bool zero_grad_to_none = true;
  int64_t sync_every = 1;         // read the loss back every N steps; 0: never

  // Parses the common settings of a resolved config and applies the
  // process-wide ones (threads, seed). Throws gpusweep::Skipped when a
  // setting cannot apply here (fp16 on CPU, CUDA without a GPU).
  static Settings apply(const TrialConfig& config);

  // True when step number `step` (0-based) should read values back to the host.
  bool should_sync(int64_t step) const {
    return sync_every > 0 && (step + 1) % sync_every == 0;
  }
  bool is_cuda() const { return device.is_cuda(); }
};

// The common settings as manifest parameters, with this workload's default
// batch size. Every LibTorch plugin lists these before its own knobs.
std::vector<Param> common_params(int64_t default_batch_size);

// "auto" | "cpu" | "cuda" | "cuda:N" -> a device that exists here, or Skipped.
torch::Device resolve_device(const std::string& name);

// Waits for all queued work on device (no-op on CPU, where ops are synchronous).
void synchronize(const torch::Device& device);

// Clears gradients: set to None (no memset, fresh allocation on the next
// backward) or zero in place, as PyTorch's zero_grad(set_to_none).
void zero_grad(torch::optim::Optimizer& optimizer, bool to_none);

// Autocast for the trial's precision, active for the scope's lifetime:
// bf16 autocast on CPU or CUDA, fp16 autocast on CUDA, nothing for fp32.
class AutocastScope {
 public:
  explicit AutocastScope(const Settings& settings);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool cpu_ = false;
  bool cuda_ = false;
};

}  // namespace gpusweep::torchkit
