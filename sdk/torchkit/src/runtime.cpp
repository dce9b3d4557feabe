// Runtime description and memory statistics; see runtime.hpp.
#include <gpusweep/torchkit/runtime.hpp>

#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/settings.hpp>

#include <gpusweep/runtime_info.hpp>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#if defined(GPUSWEEP_TORCH_CUDA)
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#endif

namespace gpusweep::torchkit {

namespace {

// "KEY=value" from LibTorch's build configuration (at::show_config()), or "".
std::string config_value(const std::string& config, const std::string& key) {
  const auto at = config.find(key + "=");
  if (at == std::string::npos) return "";
  const auto begin = at + key.size() + 1;
  const auto end = config.find_first_of(",\n", begin);
  return config.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

std::string gpu_uuid(const unsigned char* bytes) {
  // 8-4-4-4-12 hex digits after "GPU-", as nvidia-smi and NVML write it.
  std::string out = "GPU-";
  static const char* hex = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[bytes[i] >> 4];
    out += hex[bytes[i] & 0xf];
  }
  return out;
}

DeviceMemoryCap plan_device_memory_cap(double bytes, double device_bytes) {
  if (!(bytes > 0)) throw std::invalid_argument("a memory cap must be above 0 bytes");
  if (!(device_bytes > 0)) throw std::invalid_argument("the device reports no memory");
  DeviceMemoryCap cap;
  cap.device_bytes = device_bytes;
  cap.fraction = std::min(1.0, bytes / device_bytes);
  cap.limit_bytes = cap.fraction * device_bytes;
  return cap;
}

namespace {

// The file the LibTorch code in this process was loaded from.
std::string torch_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&at::show_config), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "";
}

std::string dotted(long version, long major_div, long minor_div) {
  if (version <= 0) return "";
  return std::to_string(version / major_div) + "." +
         std::to_string(version % major_div / minor_div);
}

}  // namespace

std::string cuda_driver_version() {
#if defined(GPUSWEEP_TORCH_CUDA)
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  return dotted(driver, 1000, 10);
#else
  return "";
#endif
}

std::string blas_in_use() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::string found;
  while (std::getline(maps, line)) {
    if (line.find("libmkl") != std::string::npos) return "mkl";
    if (line.find("openblas-openmp") != std::string::npos) return "openblas-openmp";
    if (line.find("openblas-pthread") != std::string::npos) found = "openblas-pthread";
    if (line.find("openblas-serial") != std::string::npos && found.empty())
      found = "openblas-serial";
    if (line.find("libopenblas") != std::string::npos && found.empty()) found = "openblas";
    if (line.find("blis") != std::string::npos && found.empty()) found = "blis";
    if (line.find("/blas/libblas.so") != std::string::npos && found.empty()) found = "reference";
  }
  if (!found.empty()) return found;
  // The torch wheel links MKL statically into libtorch_cpu: no BLAS library
  // is mapped, and the build configuration names it.
  const std::string built = config_value(at::show_config(), "BLAS_INFO");
  return built.empty() ? "unknown" : built;
}

Json runtime_info() {
  RuntimeInfo info;
  Json devices = Json::array();
  info.cuda = RuntimeCuda{};
#if defined(GPUSWEEP_TORCH_CUDA)
  info.cuda_build = true;
  // What LibTorch was built with (its own cudart and cuDNN), what this
  // torchkit was compiled against (the toolkit's headers), and the driver
  // (0 when none is installed: the call needs no GPU).
  const auto& hooks = at::detail::getCUDAHooks();
  info.cuda->torch_cuda = dotted(hooks.versionCUDART(), 1000, 10);
  info.cuda->torch_cudnn = dotted(hooks.versionCuDNN(), 10000, 100);
  info.cuda->toolkit = dotted(CUDART_VERSION, 1000, 10);
  info.cuda->driver_cuda = cuda_driver_version();
  const int count = static_cast<int>(torch::cuda::device_count());
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      char bus[32] = {0};
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) != cudaSuccess) bus[0] = 0;
      devices.push_back(
          {{"index", i},
           {"name", prop.name},
           {"pci_bus_id", bus},
           {"uuid", gpu_uuid(reinterpret_cast<const unsigned char*>(prop.uuid.bytes))},
           {"memory_bytes", static_cast<double>(prop.totalGlobalMem)},
           {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)}});
    }
  }
#else
  info.cuda_build = false;
#endif
  info.torch_version = TORCH_VERSION;
  info.torch_library = torch_library_path();
  info.cpu_capability = at::get_cpu_capability();
  info.cuda_available = torch::cuda::is_available();
  info.blas = blas_in_use();
  info.threads = at::get_num_threads();
  info.interop_threads = at::get_num_interop_threads();
  info.devices = devices;
  return info.to_json();
}

Json matmul_probe(double seconds) {
  // In a trial's process: its device, and the dtype its autocast runs
  // matmuls in (bf16 or fp16 against an fp32 peak would overstate the
  // fraction some 15 times on a Tensor Core GPU); else float32 on cuda:0.
  const auto trial = last_trial_settings();
  const auto dtype_on = [&trial](bool cuda) {
    if (!trial || trial->first.is_cuda() != cuda) return torch::kFloat;
    if (trial->second == Precision::bf16) return torch::kBFloat16;
    if (trial->second == Precision::fp16 && cuda) return torch::kHalf;
    return torch::kFloat;
  };
  Json matmul = Json::array();
  matmul.push_back(matmul_benchmark(seconds, torch::kCPU, 1024, dtype_on(false)));
  if (torch::cuda::is_available()) {
    const torch::Device gpu =
        trial && trial->first.is_cuda() ? trial->first : torch::Device(torch::kCUDA, 0);
    matmul.push_back(matmul_benchmark(seconds, gpu, 4096, dtype_on(true)));
  }
  return matmul;
}

namespace {

void enable_phase_timers() noexcept { enable_diagnostics(); }

gpusweep_status measure_matmul(double seconds, const char** result_json) noexcept {
  static std::string text;
  try {
    text = matmul_probe(seconds).dump();
    *result_json = text.c_str();
    return GPUSWEEP_STATUS_OK;
  } catch (const std::exception& e) {
    text = e.what();
  } catch (...) {
    text = "the matmul probe threw";
  }
  *result_json = text.c_str();
  return GPUSWEEP_STATUS_ERROR;
}

// GPUSWEEP_EXT_DEVICE_MEMORY_CAP: CUDA's caching allocator capped by its
// per-process memory fraction (what torch.cuda.set_per_process_memory_fraction
// sets); SKIPPED for a CPU trial, whose cap is the host's (RLIMIT_AS).
gpusweep_status cap_device_memory(const char* config_json, double bytes,
                                  const char** result_json) noexcept {
  static std::string text;
  try {
    const Json config = Json::parse(config_json);
    const torch::Device device = resolve_device(config.value("device", std::string("auto")));
    if (!device.is_cuda()) return GPUSWEEP_STATUS_SKIPPED;
#if defined(GPUSWEEP_TORCH_CUDA)
    const int index = device.has_index() ? device.index() : 0;
    // The caching allocator exists once CUDA is initialised in ATen (as
    // torch.cuda.set_per_process_memory_fraction initialises it first).
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    cudaDeviceProp prop{};
    const cudaError_t err = cudaGetDeviceProperties(&prop, index);
    if (err != cudaSuccess) {
      throw std::runtime_error(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(err));
    }
    const DeviceMemoryCap cap =
        plan_device_memory_cap(bytes, static_cast<double>(prop.totalGlobalMem));
    c10::cuda::CUDACachingAllocator::setMemoryFraction(cap.fraction,
                                                       static_cast<c10::DeviceIndex>(index));
    text = Json{{"device", device.str()},
                {"limit_bytes", cap.limit_bytes},
                {"device_bytes", cap.device_bytes},
                {"fraction", cap.fraction}}
               .dump();
    *result_json = text.c_str();
    return GPUSWEEP_STATUS_OK;
#else
    throw std::runtime_error("device " + device.str() + " in a torchkit built without CUDA");
#endif
  } catch (const Skipped&) {
    // The trial will be skipped at create() with the reason; nothing to cap.
    return GPUSWEEP_STATUS_SKIPPED;
  } catch (const std::exception& e) {
    text = e.what();
  } catch (...) {
    text = "capping the device's memory threw";
  }
  *result_json = text.c_str();
  return GPUSWEEP_STATUS_ERROR;
}

}  // namespace

const void* extension(const char* id) {
  static const gpusweep_ext_phase_timers timers = {sizeof(gpusweep_ext_phase_timers), 0,
                                                   &enable_phase_timers};
  static const gpusweep_ext_matmul_probe probe = {sizeof(gpusweep_ext_matmul_probe), 0,
                                                  &measure_matmul};
  if (std::strcmp(id, GPUSWEEP_EXT_PHASE_TIMERS) == 0) return &timers;
  static const gpusweep_ext_device_memory_cap memory_cap = {sizeof(gpusweep_ext_device_memory_cap),
                                                            0, &cap_device_memory};
  if (std::strcmp(id, GPUSWEEP_EXT_MATMUL_PROBE) == 0) return &probe;
  if (std::strcmp(id, GPUSWEEP_EXT_DEVICE_MEMORY_CAP) == 0) return &memory_cap;
  return nullptr;
}

double process_threads() {
  std::error_code ec;
  double n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return ec ? -1 : n;
}

#if defined(GPUSWEEP_TORCH_CUDA)
namespace {

// One of the CUDA caching allocator's aggregate byte counts on device: the
// bytes allocated to tensors or reserved from the driver, now or at their
// peak since the last reset.
enum class AllocatorBytes { allocated, reserved };
double allocator_bytes(const torch::Device& device, AllocatorBytes which, bool peak) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  const auto& counts =
      which == AllocatorBytes::allocated ? stats.allocated_bytes : stats.reserved_bytes;
  const auto& stat = counts[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  return static_cast<double>(peak ? stat.peak : stat.current);
}

}  // namespace
#endif

double peak_memory_bytes(const torch::Device& device) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (device.is_cuda()) return allocator_bytes(device, AllocatorBytes::allocated, /*peak=*/true);
#endif
  (void)device;
  // VmHWM, the peak resident set size, which reset_peak_memory can start
  // over (ru_maxrss cannot); ru_maxrss where /proc has no VmHWM.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    double kib = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %lf kB", &kib) == 1) return kib * 1024.0;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

std::optional<double> peak_reserved_bytes(const torch::Device& device) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (device.is_cuda()) return allocator_bytes(device, AllocatorBytes::reserved, /*peak=*/true);
#endif
  (void)device;
  return std::nullopt;
}

std::optional<double> allocated_bytes(const torch::Device& device) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (device.is_cuda()) return allocator_bytes(device, AllocatorBytes::allocated, /*peak=*/false);
#endif
  (void)device;
  return std::nullopt;
}

void reset_peak_memory(const torch::Device& device) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return;
  }
#endif
  (void)device;
  // Linux: "5" resets VmHWM to the current resident set size.
  std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace gpusweep::torchkit
