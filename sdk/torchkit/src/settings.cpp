// Parsing and applying the common settings; see settings.hpp.
#include <gpusweep/torchkit/settings.hpp>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#if defined(GPUSWEEP_TORCH_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace gpusweep::torchkit {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

std::vector<Param> common_params(int64_t default_batch_size) {
  std::vector<Param> p = {
      Param::choice("device", "auto", {"auto", "cpu", "cuda", "cuda:0", "cuda:1", "cuda:2",
                                       "cuda:3", "cuda:4", "cuda:5", "cuda:6", "cuda:7"},
                    "where the model runs; auto = the first CUDA device if any, else cpu"),
      Param::integer("batch_size", default_batch_size, 1, 1 << 20, "samples per step"),
      Param::choice("precision", "fp32", {"fp32", "bf16", "fp16"},
                    "autocast precision; fp16 needs CUDA"),
      Param::integer("threads", 0, 0, 1024,
                     "intra-op threads LibTorch uses; 0 = LibTorch's default"),
      Param::integer("seed", 0, 0, 4294967295.0, "seed for data, initialisation and sampling"),
      Param::boolean("zero_grad_to_none", true,
                     "clear gradients by dropping them (true) or zeroing them in place"),
      Param::integer("sync_every", 1, 0, 1 << 30,
                     "read the loss back to the host every N steps (a host sync); 0 = never"),
  };
  for (auto& param : p) param.common = true;
  return p;
}

torch::Device resolve_device(const std::string& name) {
  const bool cuda_built = torch::cuda::is_available() || torch::hasCUDA();
  if (name == "cpu") return torch::kCPU;
  if (name == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  }
  if (name.rfind("cuda", 0) == 0) {
    if (!torch::hasCUDA()) {
      throw Skipped("device=" + name + " needs a CUDA build of LibTorch; this one (" +
                    std::string(TORCH_VERSION) + ") was built for CPU only");
    }
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (count == 0) {
      throw Skipped("device=" + name + " but no CUDA device is visible (driver missing or " +
                    "CUDA_VISIBLE_DEVICES empty)");
    }
    torch::Device device(name);
    if (device.has_index() && device.index() >= count) {
      throw Skipped("device=" + name + " but only " + std::to_string(count) +
                    " CUDA device(s) are visible");
    }
    (void)cuda_built;
    return device.has_index() ? device : torch::Device(torch::kCUDA, 0);
  }
  throw std::invalid_argument("unknown device '" + name + "' (use auto, cpu, cuda or cuda:N)");
}

Settings Settings::apply(const TrialConfig& config) {
  Settings s;
  s.device = resolve_device(config.get_or<std::string>("device", "auto"));
  s.batch_size = config.get_or<int64_t>("batch_size", 1);
  const auto precision = config.get_or<std::string>("precision", "fp32");
  if (precision == "fp32") {
    s.precision = Precision::fp32;
  } else if (precision == "bf16") {
    s.precision = Precision::bf16;
  } else if (precision == "fp16") {
    s.precision = Precision::fp16;
    if (!s.device.is_cuda()) {
      throw Skipped("precision=fp16 (float16 autocast with a gradient scaler) needs a CUDA "
                    "device; device is cpu (use precision=bf16 on CPU)");
    }
  } else {
    throw std::invalid_argument("unknown precision '" + precision + "' (fp32, bf16 or fp16)");
  }
  s.threads = config.get_or<int>("threads", 0);
  s.seed = config.get_or<uint64_t>("seed", 0);
  s.zero_grad_to_none = config.get_or<bool>("zero_grad_to_none", true);
  s.sync_every = config.get_or<int64_t>("sync_every", 1);

  if (s.threads > 0) {
    at::set_num_threads(s.threads);
  }
  torch::manual_seed(s.seed);
  return s;
}

void synchronize(const torch::Device& device) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (device.is_cuda()) {
    c10::cuda::device_synchronize();
    return;
  }
#endif
  (void)device;  // CPU ops complete before they return.
}

void zero_grad(torch::optim::Optimizer& optimizer, bool to_none) {
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (!p.mutable_grad().defined()) continue;
      if (to_none) {
        p.mutable_grad().reset();
      } else {
        p.mutable_grad().detach_();
        p.mutable_grad().zero_();
      }
    }
  }
}

AutocastScope::AutocastScope(const Settings& settings) {
  if (settings.precision == Precision::fp32) return;
  const auto dtype = settings.precision == Precision::bf16 ? at::kBFloat16 : at::kHalf;
  if (settings.device.is_cuda()) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
    cuda_ = true;
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(true);
    cpu_ = true;
  }
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!cpu_ && !cuda_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cpu_) at::autocast::set_cpu_enabled(false);
  if (cuda_) at::autocast::set_enabled(false);
}

}  // namespace gpusweep::torchkit
