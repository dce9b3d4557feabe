// Parsing and applying the common settings; see settings.hpp.
#include <gpusweep/torchkit/settings.hpp>

#include <gpusweep/torchkit/data_parallel.hpp>
#include <gpusweep/torchkit/runtime.hpp>

#include <malloc.h>
#include <climits>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include <torch/cuda.h>

#include <cstdlib>

#if defined(GPUSWEEP_TORCH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace gpusweep::torchkit {
namespace {

// The channels_last a config gets when it does not say: the manifest's
// default and Settings::apply's for a config not resolved against it.
bool channels_last_by_default(const Support& support) {
  return support.channels_last && support.channels_last_default;
}

}  // namespace

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

// Every step frees and reallocates the same activations. With glibc's
// defaults, blocks above the (sliding, at most 32 MiB) mmap threshold are
// mapped and unmapped each time and the heap top is trimmed, so each step
// takes fresh zeroed pages from the kernel: up to 40% of a restoration step
// in system time on CPU. A worker process hosts one trial, so this
// process-wide policy is the trial's to choose; it is a setting so that its
// effect can be measured.
void keep_freed_memory() {
  constexpr int kTopPad = 64 << 20;
  mallopt(M_MMAP_MAX, 0);              // every block from the heap, reused once freed
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // never give the heap top back
  mallopt(M_TOP_PAD, kTopPad);         // grow the heap in large steps
}

// Long by design: the settings table, one entry a setting.
std::vector<Param> common_params(int64_t default_batch_size, const Support& support) {
  auto na = [&support](Param p, bool applies) {
    p.applies = applies;
    if (!applies && !support.reason.empty()) p.description += " (here: " + support.reason + ")";
    return p;
  };
  // The data-parallel settings have a reason of their own.
  auto dp = [&support](Param p) {
    p.applies = support.data_parallel;
    if (!p.applies) {
      p.description +=
          " (here: the workload does not take a rank's share of each global batch, so it runs "
          "at world_size 1 only)";
    }
    return p;
  };
  std::vector<Param> p = {
      Param::choice("device", "auto",
                    {"auto", "cpu", "cuda", "cuda:0", "cuda:1", "cuda:2", "cuda:3", "cuda:4",
                     "cuda:5", "cuda:6", "cuda:7"},
                    "where the model runs; auto = the first CUDA device if any, else cpu"),
      Param::integer("batch_size", default_batch_size, 1, 1 << 20, "samples per micro-batch"),
      na(Param::choice("precision", "fp32", {"fp32", "bf16", "fp16"},
                       "autocast precision of the forward pass; fp16 (with a gradient scaler) "
                       "needs CUDA"),
         support.precision),
      Param::integer("threads", 0, 0, 1024,
                     "intra-op threads LibTorch uses; 0 = LibTorch's default (the machine's "
                     "cores), and 1 a rank for a data-parallel trial on the CPU"),
      Param::integer("seed", 0, 0, 4294967295.0, "seed for data, initialisation and sampling"),
      Param::boolean("zero_grad_to_none", true,
                     "clear gradients by dropping them (true) or zeroing them in place"),
      Param::boolean("keep_freed_memory", true,
                     "host allocator keeps freed memory for the next step (glibc: no mmap, no "
                     "trimming); false = glibc's defaults, which unmap big tensors each step"),
      na(Param::integer("sync_every", 1, 0, 1 << 30,
                        "read the loss back to the host every N steps (a host sync); 0 = never"),
         support.sync_every),
      Param::boolean("tf32", false,
                     "CUDA: TF32 tensor cores for float32 matmuls (cuBLAS). As in stock "
                     "PyTorch, cuDNN's convolutions and RNNs use TF32 either way "
                     "(torch.backends.cudnn.allow_tf32 = True): false is PyTorch's default"),
      na(Param::boolean("cudnn_benchmark", false,
                        "CUDA: let cuDNN time its convolution algorithms and keep the fastest"),
         support.cudnn),
      na(Param::boolean("channels_last", channels_last_by_default(support),
                        "NHWC memory format for the model's 4-D weights and inputs"),
         support.channels_last),
      na(Param::integer("loader_workers", 0, 0, 64,
                        "background threads producing batches; 0 = the step produces its own"),
         support.input_pipeline),
      na(Param::integer("prefetch", 2, 1, 1024,
                        "batches each loader worker may have ready ahead of the step"),
         support.input_pipeline),
      na(Param::boolean("pin_memory", false,
                        "CUDA: produce batches in page-locked host memory for faster copies"),
         support.input_pipeline),
      na(Param::boolean("non_blocking", false,
                        "CUDA: copy batches to the device asynchronously (from pinned memory)"),
         support.input_pipeline),
      na(Param::integer("grad_accum", 1, 1, 4096,
                        "micro-batches per optimiser step (loss scaled by 1/grad_accum)"),
         support.grad_accum),
      dp(Param::integer("world_size", 1, 1, 1024,
                        "data-parallel ranks: processes training one model on their shares of "
                        "each global batch of world_size x batch_size, gradients all-reduced "
                        "as DistributedDataParallel does; each rank its own GPU from --gpus, "
                        "or on the CPU its own threads")),
      dp(Param::choice("dp_backend", "auto", {"auto", "gloo", "nccl"},
                       "world_size > 1: the collectives' library; auto = NCCL on CUDA, Gloo "
                       "on the CPU")),
      dp(Param::real("dp_bucket_mb", 25, 0.001, 4096,
                     "world_size > 1: gradient bucket size in MiB, each all-reduced as soon "
                     "as its gradients are ready (DDP's bucket_cap_mb; the first bucket 1 MiB)")),
      dp(Param::boolean("dp_static_graph", false,
                        "world_size > 1: the reducer's static-graph mode (DDP's static_graph): "
                        "the same parameters get gradients every step")),
  };
  for (auto& param : p) param.common = true;
  return p;
}

torch::Device resolve_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  if (name == "auto") {
    return torch::cuda::is_available() ? torch::Device(torch::kCUDA, 0)
                                       : torch::Device(torch::kCPU);
  }
  if (name.rfind("cuda", 0) == 0) {
#if !defined(GPUSWEEP_TORCH_CUDA)
    throw Skipped("device=" + name + " needs a CUDA build of LibTorch; this plugin was built " +
                  "against LibTorch " + std::string(TORCH_VERSION) + " without CUDA");
#else
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (count == 0) {
      const std::string driver = cuda_driver_version();
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      throw Skipped("device=" + name + " but no CUDA device is visible: " +
                    (driver.empty()
                         ? std::string("no NVIDIA driver on this machine")
                         : "the driver (for CUDA " + driver + ") sees none" +
                               (visible != nullptr
                                    ? std::string(" with CUDA_VISIBLE_DEVICES='") + visible + "'"
                                    : std::string())));
    }
    torch::Device device(name);
    if (device.has_index() && device.index() >= count) {
      throw Skipped("device=" + name + " but only " + std::to_string(count) +
                    " CUDA device(s) are visible");
    }
    return device.has_index() ? device : torch::Device(torch::kCUDA, 0);
#endif
  }
  throw std::invalid_argument("unknown device '" + name + "' (use auto, cpu, cuda or cuda:N)");
}

namespace {

std::string not_here(const std::string& setting, const Support& support) {
  return setting + " does not apply to this workload" +
         (support.reason.empty() ? std::string() : ": " + support.reason);
}

// world_size and the dp_ settings, with the rank and rendezvous the worker
// put in the environment (data_parallel.hpp).
void apply_data_parallel(const TrialConfig& config, const Support& support, Settings& s) {
  s.world_size = config.get_or<int64_t>("world_size", 1);
  const auto backend = config.get_or<std::string>("dp_backend", "auto");
  s.dp_bucket_mb = config.get_or<double>("dp_bucket_mb", 25);
  s.dp_static_graph = config.get_or<bool>("dp_static_graph", false);
  if (s.world_size <= 1) return;
  if (!support.data_parallel) {
    throw Skipped(
        "world_size > 1: this workload does not take its rank's share of each global batch "
        "(Support::data_parallel), so every rank would train on the same data; it runs at "
        "world_size 1 only");
  }
  if (backend == "nccl" && !s.device.is_cuda()) {
    throw Skipped("dp_backend=nccl all-reduces CUDA tensors; device is " + s.device.str() +
                  " (use dp_backend=gloo or auto)");
  }
  if (s.dp_static_graph && config.get_or<int64_t>("grad_accum", 1) > 1) {
    // The reducer's static graph counts each parameter's gradient hooks in
    // its first step and expects as many in every later one; micro-batches
    // accumulated locally fire hooks it does not reduce after.
    throw Skipped(
        "dp_static_graph with grad_accum > 1: the reducer's static graph expects the hooks it "
        "counted in its first step in every later one, which micro-batches accumulated "
        "locally (no_sync) break; use one of them");
  }
  s.dp_backend = backend == "auto" ? (s.device.is_cuda() ? "nccl" : "gloo") : backend;
  const char* rank = std::getenv("GPUSWEEP_DP_RANK");
  const char* size = std::getenv("GPUSWEEP_DP_WORLD_SIZE");
  const char* store = std::getenv("GPUSWEEP_DP_STORE");
  if (rank == nullptr || size == nullptr || store == nullptr || std::atoll(size) != s.world_size) {
    throw std::invalid_argument(
        "world_size=" + std::to_string(s.world_size) +
        " needs the ranks gpusweep's worker starts (GPUSWEEP_DP_RANK, GPUSWEEP_DP_WORLD_SIZE "
        "and GPUSWEEP_DP_STORE are " +
        (size == nullptr ? std::string("unset") : "for world size " + std::string(size)) +
        "): run the trial with gpusweep run, not on its own");
  }
  s.rank = std::atoll(rank);
  s.dp_store = store;
  if (const char* t = std::getenv("GPUSWEEP_DP_TIMEOUT_S"); t != nullptr && std::atof(t) > 0) {
    s.dp_timeout_s = std::atof(t);
  }
}

}  // namespace

// Long by design: one short block per common setting, in the order the
// manifest lists them; later ones read earlier ones (the device first).
Settings Settings::apply(const TrialConfig& config, const Support& support) {
  Settings s;
  s.device = resolve_device(config.get_or<std::string>("device", "auto"));
  const std::string dev = s.device.str();
  s.batch_size = config.get_or<int64_t>("batch_size", 1);
  const auto precision = config.get_or<std::string>("precision", "fp32");
  if (precision == "fp32") {
    s.precision = Precision::fp32;
  } else if (precision == "bf16") {
    s.precision = Precision::bf16;
  } else if (precision == "fp16") {
    s.precision = Precision::fp16;
    if (!s.device.is_cuda()) {
      throw Skipped(
          "precision=fp16 (float16 autocast with a gradient scaler) needs a CUDA "
          "device; device is " +
          dev + " (use precision=bf16 on CPU)");
    }
  } else {
    throw std::invalid_argument("unknown precision '" + precision + "' (fp32, bf16 or fp16)");
  }
  if (s.precision != Precision::fp32 && !support.precision) {
    throw Skipped(not_here("precision=" + precision, support));
  }
  s.threads = config.get_or<int>("threads", 0);
  s.seed = config.get_or<uint64_t>("seed", 0);
  s.zero_grad_to_none = config.get_or<bool>("zero_grad_to_none", true);
  s.sync_every = config.get_or<int64_t>("sync_every", 1);
  s.tf32 = config.get_or<bool>("tf32", false);
  s.cudnn_benchmark = config.get_or<bool>("cudnn_benchmark", false);
  s.channels_last = config.get_or<bool>("channels_last", channels_last_by_default(support));
  s.loader_workers = config.get_or<int64_t>("loader_workers", 0);
  s.prefetch = config.get_or<int64_t>("prefetch", 2);
  s.pin_memory = config.get_or<bool>("pin_memory", false);
  s.non_blocking = config.get_or<bool>("non_blocking", false);
  s.grad_accum = config.get_or<int64_t>("grad_accum", 1);
  s.keep_freed_memory = config.get_or<bool>("keep_freed_memory", true);
  apply_data_parallel(config, support, s);

  // Device limits first: they say what the machine lacks.
  if (s.tf32 && !s.device.is_cuda()) {
    throw Skipped("tf32 applies to CUDA float32 matmuls; device is " + dev);
  }
  if (s.cudnn_benchmark && !s.device.is_cuda()) {
    throw Skipped("cudnn_benchmark tunes cuDNN convolutions on CUDA; device is " + dev);
  }
  if (s.pin_memory && !s.device.is_cuda()) {
    throw Skipped("pin_memory speeds host-to-device copies into CUDA memory; device is " + dev);
  }
  if (s.non_blocking && !s.device.is_cuda()) {
    throw Skipped("non_blocking overlaps host-to-device copies with CUDA work; device is " + dev);
  }
#if defined(GPUSWEEP_TORCH_CUDA)
  // TF32 and fast bfloat16 matmuls need Ampere's Tensor Cores: on an older
  // GPU tf32 would change nothing and bf16 would run emulated (audit M1).
  if (s.device.is_cuda() && (s.tf32 || s.precision == Precision::bf16)) {
    cudaDeviceProp prop{};
    const int index = s.device.has_index() ? s.device.index() : 0;
    if (cudaGetDeviceProperties(&prop, index) == cudaSuccess && prop.major < 8) {
      const std::string gpu = dev + " (" + prop.name + ", compute capability " +
                              std::to_string(prop.major) + "." + std::to_string(prop.minor) + ")";
      if (s.tf32) {
        throw Skipped("tf32 needs TF32 Tensor Cores (compute capability 8.0, Ampere, or newer); " +
                      gpu + " has none, so it would change nothing");
      }
      throw Skipped(
          "precision=bf16 needs bfloat16 Tensor Cores (compute capability 8.0, Ampere, "
          "or newer); on " +
          gpu + " it would run emulated");
    }
  }
#endif
  // Then what the workload lacks.
  if (s.channels_last && !support.channels_last) throw Skipped(not_here("channels_last", support));
  if ((s.loader_workers != 0 || s.prefetch != 2 || s.pin_memory) && !support.input_pipeline) {
    throw Skipped(
        not_here("loader_workers/prefetch/pin_memory (it has no input pipeline)", support));
  }
  // A setting with nothing to act on would measure nothing and read as "no
  // difference" (audit M1): skipped instead.
  if (s.non_blocking && !support.input_pipeline) {
    throw Skipped(not_here("non_blocking (no batch is copied to the device per step)", support));
  }
  if (s.cudnn_benchmark && !support.cudnn) {
    throw Skipped(not_here("cudnn_benchmark (no cuDNN convolution or RNN)", support));
  }
  if (s.grad_accum != 1 && !support.grad_accum) throw Skipped(not_here("grad_accum", support));
  if (s.sync_every != 1 && !support.sync_every) throw Skipped(not_here("sync_every", support));
  if (s.batch_size < 1 || s.grad_accum < 1 || s.prefetch < 1 || s.loader_workers < 0) {
    throw std::invalid_argument("batch_size, grad_accum and prefetch must be positive");
  }

  if (s.threads > 0) {
    at::set_num_threads(s.threads);
  } else if (s.world_size > 1) {
    // One thread a rank unless told: N ranks then compare with N times one
    // process of one thread, so that a scaling efficiency of 100% means
    // what it says (a rank of its share of the cores measured thread scaling
    // against the single process's all-core team: the 2026-11-26 audit's
    // M6). Each rank is bound to its share of the CPUs by the host.
    at::set_num_threads(1);
  }
  if (s.keep_freed_memory) torchkit::keep_freed_memory();
  if (s.device.is_cuda()) {
    // Stock PyTorch's defaults unless asked: matmul TF32 off, cuDNN TF32 on
    // (audit M2: turning cuDNN's off made the fp32 baseline slower than
    // PyTorch's and the tf32 gain larger than a PyTorch user would see).
    at::globalContext().setAllowTF32CuBLAS(s.tf32);
    at::globalContext().setAllowTF32CuDNN(true);
    at::globalContext().setBenchmarkCuDNN(s.cudnn_benchmark);
  }
  torch::manual_seed(s.seed);
  return s;
}

void Settings::prepare(torch::nn::Module& module) const {
  module.to(device);
  if (channels_last) {
    torch::NoGradGuard no_grad;
    for (auto& p : module.parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
  if (world_size > 1) broadcast_from_first_rank(*this, module);
}

int64_t channels_last_weights(torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) {
    // A 1x1 kernel with one channel is both layouts at once: not counted.
    if (p.dim() == 4 && p.is_contiguous(at::MemoryFormat::ChannelsLast) && !p.is_contiguous()) ++n;
  }
  return n;
}

torch::Tensor Settings::to_device(const torch::Tensor& host_tensor) const {
  return to_layout(copy_to_device(host_tensor));
}

torch::Tensor Settings::copy_to_device(const torch::Tensor& host_tensor) const {
  return host_tensor.to(device, /*non_blocking=*/non_blocking);
}

torch::Tensor Settings::to_layout(const torch::Tensor& device_tensor) const {
  if (channels_last && device_tensor.dim() == 4) {
    return device_tensor.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return device_tensor;
}

void synchronize(const torch::Device& device) {
  if (!device.is_cuda()) return;  // CPU ops complete before they return.
#if defined(GPUSWEEP_TORCH_CUDA)
  // The trial's device, not the current one (cudaDeviceSynchronize would
  // wait on whatever device is current, which ops on cuda:N do not change).
  torch::cuda::synchronize(device.has_index() ? device.index() : -1);
#else
  throw std::runtime_error("synchronize(" + device.str() +
                           "): this torchkit was compiled without CUDA (GPUSWEEP_TORCH_CUDA), so "
                           "it cannot wait for a CUDA device; rebuild against a CUDA LibTorch "
                           "with the CUDA toolkit present");
#endif
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
  device_type_ = settings.device.type();
  const auto dtype = settings.precision == Precision::bf16 ? at::kBFloat16 : at::kHalf;
  // LibTorch 2.x keeps one autocast state per device type; the scope saves
  // and restores it, as torch.autocast does.
  prev_enabled_ = at::autocast::is_autocast_enabled(device_type_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_type_);
  at::autocast::set_autocast_dtype(device_type_, dtype);
  at::autocast::set_autocast_enabled(device_type_, true);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_type_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_type_, prev_dtype_);
}

}  // namespace gpusweep::torchkit
