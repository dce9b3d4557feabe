// The common settings (gpusweep/common_settings.hpp, docs/settings.md) applied the same way in
// every LibTorch plugin. Each setting either takes effect or makes the trial
// `skipped` with a reason: because the device cannot do it (tf32 on CPU) or
// because the workload has nothing it applies to (channels_last on an LSTM).
#pragma once

#include <gpusweep/common_settings.hpp>
#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::torchkit {

enum class Precision { fp32, bf16, fp16 };

const char* to_string(Precision p);

// What a workload has for the common settings to act on (the table's
// header): a plugin sets the flags and a reason, and its own defaults where
// they differ from the table's (s.defaults["channels_last"] = true).
using gpusweep::Support;

// Makes glibc keep freed memory in the process for the next step (applied
// by Settings::apply when keep_freed_memory is on; process-wide, for good).
void keep_freed_memory();

// A trial's common settings, resolved: the values the table's entries read
// as they are (CommonValues: batch_size, channels_last, sync_every, ...), and
// those torchkit resolves (the device, the precision, the data-parallel
// rank and rendezvous).
struct Settings : CommonValues {
  torch::Device device{torch::kCPU};
  Precision precision = Precision::fp32;
  // Data-parallel trials (data_parallel.hpp): world_size ranks, one process
  // each; this one is `rank`. batch_size is per rank: a step's global batch
  // is world_size x batch_size.
  int64_t rank = 0;
  std::string dp_backend = "gloo";  // resolved: gloo or nccl
  std::string dp_store;             // the rendezvous: a FileStore path the worker gave
  double dp_timeout_s = 120;        // rendezvous and collectives give up after this

  // The first sample of this rank's share of a global batch (rank x batch_size).
  int64_t shard_begin() const { return rank * batch_size; }
  int64_t global_batch() const { return world_size * batch_size; }

  // Parses the common settings of a resolved config, refuses (Skipped) what
  // cannot apply here, and applies the process-wide ones (threads, seed,
  // TF32, cuDNN benchmark, the host allocator's policy).
  static Settings apply(const TrialConfig& config, const Support& support = {});

  // True when step number `step` (0-based) should read values back to the host.
  bool should_sync(int64_t step) const { return sync_every > 0 && (step + 1) % sync_every == 0; }
  bool is_cuda() const { return device.is_cuda(); }

  // Moves a module to the device (and to channels_last when set); at
  // world_size > 1, then broadcasts its parameters and buffers from rank 0.
  void prepare(torch::nn::Module& module) const;
  // Moves a batch tensor to the device (non_blocking when set; channels_last
  // for 4-D tensors when set): to_layout(copy_to_device(host_tensor)).
  torch::Tensor to_device(const torch::Tensor& host_tensor) const;
  // The copy alone (non_blocking when set), what transfer_time times.
  torch::Tensor copy_to_device(const torch::Tensor& host_tensor) const;
  // A tensor on the device in the memory format the settings ask for
  // (channels_last for 4-D tensors when set): a kernel of its own, no copy.
  torch::Tensor to_layout(const torch::Tensor& device_tensor) const;
};

// The common settings as manifest parameters, with this workload's default
// batch size; every LibTorch plugin lists these before its own knobs.
std::vector<Param> common_params(int64_t default_batch_size, const Support& support = {});

// The common settings torchkit applies with a function of its own (the
// device, the precision, threads, ...), by their names in the table.
std::vector<std::string> apply_function_names();

// "auto" | "cpu" | "cuda" | "cuda:N" -> a device that exists here, or Skipped.
torch::Device resolve_device(const std::string& name);

// The module's 4-D parameters (conv weights) laid out channels-last, read
// from the tensors' own strides: what prepare() did, for a plugin's stats.
int64_t channels_last_weights(torch::nn::Module& module);

// The device and precision of the trial this process set up (a
// TorchWorkload notes its settings): the matmul probe measures the peak the
// trial's matmuls can reach (its device, its autocast dtype). Nothing before
// any trial (doctor's probe process).
void note_trial_settings(const Settings& settings);
std::optional<std::pair<torch::Device, Precision>> last_trial_settings();

// Waits for all queued work on device (no-op on CPU, where ops are
// synchronous). A CUDA device with a torchkit compiled without CUDA throws:
// a sync that silently did nothing would make every block time wrong.
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
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kBFloat16;
};

}  // namespace gpusweep::torchkit
