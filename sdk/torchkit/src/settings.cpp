// Parsing and applying the common settings; see settings.hpp.
#include <gpusweep/torchkit/settings.hpp>

#include <gpusweep/torchkit/data_parallel.hpp>
#include <gpusweep/torchkit/runtime.hpp>

#include <malloc.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include <torch/cuda.h>

#include <cstdlib>

#if defined(GPUSWEEP_TORCH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace gpusweep::torchkit {

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

namespace {

// The value a config gets when it does not say: the workload's own default
// for a setting it supports (Support::defaults), else the table's.
Json default_of(const CommonSetting& entry, const Support& support) {
  const bool applies = entry.needs == nullptr || support.*(entry.needs);
  if (auto it = support.defaults.find(entry.name()); applies && it != support.defaults.end()) {
    return *it;
  }
  return entry.param.default_value;
}

}  // namespace

std::vector<Param> common_params(int64_t default_batch_size, const Support& support) {
  Support with_batch = support;
  with_batch.defaults["batch_size"] = default_batch_size;
  std::vector<Param> params;
  for (const auto& entry : common_settings()) {
    Param p = entry.param;
    p.default_value = default_of(entry, with_batch);
    p.applies = entry.needs == nullptr || support.*(entry.needs);
    const SupportFlag* flag = support_flag_of(entry);
    const std::string why =
        flag != nullptr && *flag->without != '\0' ? flag->without : support.reason;
    if (!p.applies && !why.empty()) p.description += " (here: " + why + ")";
    params.push_back(std::move(p));
  }
  return params;
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

// "tf32" for a boolean, "precision=fp16" for another value.
std::string named_value(const std::string& name, const Json& value) {
  if (value.is_boolean()) return name;
  return name + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
}

// The common settings whose value needs more than its CommonValues field,
// each with its apply function: `resolve` reads what the table cannot (the
// device, the precision, the ranks) and refuses what cannot run; `check`
// refuses what the device cannot do after the table's device limits; `effect`
// sets what is process-wide, once the trial is known to run.
struct Applier {
  const char* name;
  void (*resolve)(Settings&, const Json& value, const Support&) = nullptr;
  void (*check)(const Settings&) = nullptr;
  void (*effect)(const Settings&) = nullptr;
};

void resolve_device_setting(Settings& s, const Json& value, const Support&) {
  s.device = resolve_device(value.get<std::string>());
}

void resolve_precision(Settings& s, const Json& value, const Support&) {
  const auto name = value.get<std::string>();
  s.precision = name == "bf16"   ? Precision::bf16
                : name == "fp16" ? Precision::fp16
                                 : Precision::fp32;
}

// "<gpu> (<name>, compute capability 7.5)" when the trial's GPU predates
// Ampere's Tensor Cores (TF32, fast bfloat16), else empty.
std::string without_tensor_cores(const Settings& s) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (!s.device.is_cuda()) return "";
  cudaDeviceProp prop{};
  const int index = s.device.has_index() ? s.device.index() : 0;
  if (cudaGetDeviceProperties(&prop, index) == cudaSuccess && prop.major < 8) {
    return s.device.str() + " (" + prop.name + ", compute capability " +
           std::to_string(prop.major) + "." + std::to_string(prop.minor) + ")";
  }
#else
  (void)s;
#endif
  return "";
}

// On an older GPU bf16 would run emulated: measuring the emulation, not bf16.
void check_precision(const Settings& s) {
  if (s.precision != Precision::bf16) return;
  if (const std::string gpu = without_tensor_cores(s); !gpu.empty()) {
    throw Skipped(
        "precision=bf16 needs bfloat16 Tensor Cores (compute capability 8.0, Ampere, or newer); "
        "on " +
        gpu + " it would run emulated");
  }
}

void check_tf32(const Settings& s) {
  if (!s.tf32) return;
  if (const std::string gpu = without_tensor_cores(s); !gpu.empty()) {
    throw Skipped("tf32 needs TF32 Tensor Cores (compute capability 8.0, Ampere, or newer); " +
                  gpu + " has none, so it would change nothing");
  }
}

// What a captured step cannot hold: a data-parallel step's all-reduce
// hooks and timing events run on the host. (fp16's scaler keeps its check
// on the device with a capturable fused optimiser: GradStep refuses the
// others.)
void check_cuda_graphs(const Settings& s) {
  if (!s.cuda_graphs) return;
  if (s.world_size > 1) {
    throw Skipped(
        "cuda_graphs with world_size > 1: the data-parallel step's bucket hooks and timing "
        "events run on the host each step; use one of them");
  }
}

// Stock PyTorch's defaults unless asked: matmul TF32 off, cuDNN TF32 on
// (turning cuDNN's off made the fp32 baseline slower than
// PyTorch's and the tf32 gain larger than a PyTorch user would see).
void effect_tf32(const Settings& s) {
  if (!s.device.is_cuda()) return;
  at::globalContext().setAllowTF32CuBLAS(s.tf32);
  at::globalContext().setAllowTF32CuDNN(true);
}

void effect_cudnn_benchmark(const Settings& s) {
  if (s.device.is_cuda()) at::globalContext().setBenchmarkCuDNN(s.cudnn_benchmark);
}

void effect_threads(const Settings& s) {
  if (s.threads > 0) {
    at::set_num_threads(s.threads);
  } else if (s.world_size > 1) {
    // One thread a rank unless told: N ranks then compare with N times one
    // process of one thread, so that a scaling efficiency of 100% means
    // what it says (a rank of its share of the cores measured thread scaling
    // against the single process's all-core team). Each rank is bound to
    // its share of the CPUs by the host.
    at::set_num_threads(1);
  }
}

void effect_seed(const Settings& s) { torch::manual_seed(s.seed); }

void effect_keep_freed_memory(const Settings& s) {
  if (s.keep_freed_memory) torchkit::keep_freed_memory();
}

// world_size > 1: the backend, the rank and rendezvous the worker put in the
// environment (data_parallel.hpp). The dp_ settings mean nothing at one rank
// and are not refused there.
// Each refusal says what to change.
void resolve_world_size(Settings& s, const Json&, const Support& support) {
  if (s.world_size <= 1) return;
  if (!support.data_parallel) {
    throw Skipped(
        "world_size > 1: this workload does not take its rank's share of each global batch "
        "(Support::data_parallel), so every rank would train on the same data; it runs at "
        "world_size 1 only");
  }
  if (s.dp_backend == "nccl" && !s.device.is_cuda()) {
    throw Skipped("dp_backend=nccl all-reduces CUDA tensors; device is " + s.device.str() +
                  " (use dp_backend=gloo or auto)");
  }
  if (s.dp_static_graph && s.grad_accum > 1) {
    // The reducer's static graph counts each parameter's gradient hooks in
    // its first step and expects as many in every later one; micro-batches
    // accumulated locally fire hooks it does not reduce after.
    throw Skipped(
        "dp_static_graph with grad_accum > 1: the reducer's static graph expects the hooks it "
        "counted in its first step in every later one, which micro-batches accumulated "
        "locally (no_sync) break; use one of them");
  }
  if (s.dp_backend == "auto") s.dp_backend = s.device.is_cuda() ? "nccl" : "gloo";
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

void resolve_dp_backend(Settings& s, const Json& value, const Support&) {
  s.dp_backend = value.get<std::string>();
}

// One entry a setting that needs more than its field, by the table's name
// (a unit test finds each name in the table); resolved in this order.
const std::vector<Applier>& appliers() {
  static const std::vector<Applier> a = {
      {"device", resolve_device_setting},
      {"precision", resolve_precision, check_precision},
      {"threads", nullptr, nullptr, effect_threads},
      {"seed", nullptr, nullptr, effect_seed},
      {"keep_freed_memory", nullptr, nullptr, effect_keep_freed_memory},
      {"tf32", nullptr, check_tf32, effect_tf32},
      {"cudnn_benchmark", nullptr, nullptr, effect_cudnn_benchmark},
      {"dp_backend", resolve_dp_backend},
      {"world_size", resolve_world_size},  // after dp_backend: it resolves "auto"
      {"cuda_graphs", nullptr, check_cuda_graphs},
  };
  return a;
}

const Applier* applier_of(const std::string& name) {
  for (const auto& a : appliers()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

// The config's value of a common setting, or its default here; checked
// against the table's type and range (a config the host resolved already is).
Json value_of(const CommonSetting& entry, const TrialConfig& config, const Support& support) {
  Json value =
      config.has(entry.name()) ? config.json().at(entry.name()) : default_of(entry, support);
  if (auto problem = entry.param.check(value)) {
    throw std::invalid_argument("common setting '" + entry.name() + "': " + *problem);
  }
  return value;
}

void store(Settings& s, const CommonSetting& entry, const Json& value) {
  std::visit(
      [&](auto field) {
        using F = decltype(field);
        if constexpr (!std::is_same_v<F, std::monostate>) {
          CommonValues& values = s;
          using T = std::remove_reference_t<decltype(values.*field)>;
          values.*field = value.get<T>();
        }
      },
      entry.field);
}

}  // namespace

std::vector<std::string> apply_function_names() {
  std::vector<std::string> names;
  for (const auto& a : appliers()) names.emplace_back(a.name);
  return names;
}

namespace {

std::mutex& last_trial_mutex() {
  static std::mutex m;
  return m;
}
std::optional<std::pair<torch::Device, Precision>>& last_trial() {
  static std::optional<std::pair<torch::Device, Precision>> last;
  return last;
}

}  // namespace

std::optional<std::pair<torch::Device, Precision>> last_trial_settings() {
  std::lock_guard<std::mutex> lock(last_trial_mutex());
  return last_trial();
}

// The table's entries in four passes: every value read (the device and the
// ranks resolved), then what the device cannot do, then what the workload
// has nothing for, and only then the process-wide effects.
Settings Settings::apply(const TrialConfig& config, const Support& support) {
  Settings s;
  const auto& table = common_settings();
  std::vector<Json> values;
  values.reserve(table.size());
  for (const auto& entry : table) {
    values.push_back(value_of(entry, config, support));
    store(s, entry, values.back());
  }
  for (const auto& a : appliers()) {
    if (a.resolve == nullptr) continue;
    const CommonSetting* entry = find_common_setting(a.name);
    if (entry == nullptr) throw std::logic_error(std::string("no common setting ") + a.name);
    a.resolve(s, values.at(static_cast<size_t>(entry - table.data())), support);
  }
  // Device limits first: they say what the machine lacks.
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& cuda = table[i].cuda_values;
    if (!s.device.is_cuda() && std::find(cuda.begin(), cuda.end(), values[i]) != cuda.end()) {
      throw Skipped(named_value(table[i].name(), values[i]) + " " + table[i].on_cuda +
                    "; device is " + s.device.str());
    }
  }
  for (const auto& entry : table) {
    if (const Applier* a = applier_of(entry.name()); a != nullptr && a->check != nullptr) {
      a->check(s);
    }
  }
  // Then what the workload lacks: a setting with nothing to act on would
  // measure nothing and read as "no difference". The ranks'
  // settings are refused by world_size alone.
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& entry = table[i];
    if (entry.needs == nullptr || entry.needs == &Support::data_parallel ||
        support.*(entry.needs) || values[i] == entry.param.default_value) {
      continue;
    }
    throw Skipped(not_here(named_value(entry.name(), values[i]) +
                               (entry.lacking.empty() ? std::string() : " (" + entry.lacking + ")"),
                           support));
  }
  for (const auto& entry : table) {
    if (const Applier* a = applier_of(entry.name()); a != nullptr && a->effect != nullptr) {
      a->effect(s);
    }
  }
  return s;
}

void note_trial_settings(const Settings& settings) {
  std::lock_guard<std::mutex> lock(last_trial_mutex());
  last_trial() = std::make_pair(settings.device, settings.precision);
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
