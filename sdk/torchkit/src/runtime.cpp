// Runtime description and memory statistics; see runtime.hpp.
#include <gpusweep/torchkit/runtime.hpp>

#include <gpusweep/torchkit/diagnostics.hpp>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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
  Json devices = Json::array();
  Json cuda = Json::object();
#if defined(GPUSWEEP_TORCH_CUDA)
  const bool cuda_build = true;
  // What LibTorch was built with (its own cudart and cuDNN), what this
  // torchkit was compiled against (the toolkit's headers), and the driver
  // (0 when none is installed: the call needs no GPU).
  const auto& hooks = at::detail::getCUDAHooks();
  cuda["torch_cuda"] = dotted(hooks.versionCUDART(), 1000, 10);
  cuda["torch_cudnn"] = dotted(hooks.versionCuDNN(), 10000, 100);
  cuda["toolkit"] = dotted(CUDART_VERSION, 1000, 10);
  cuda["driver_cuda"] = cuda_driver_version();
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
           {"memory_bytes", static_cast<double>(prop.totalGlobalMem)},
           {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)}});
    }
  }
#else
  const bool cuda_build = false;
#endif
  Json info{{"torch_version", TORCH_VERSION},
            {"torch_library", torch_library_path()},
            {"cpu_capability", at::get_cpu_capability()},
            {"cuda_build", cuda_build},
            {"cuda", cuda},
            {"cuda_available", torch::cuda::is_available()},
            {"blas", blas_in_use()},
            {"threads", at::get_num_threads()},
            {"interop_threads", at::get_num_interop_threads()},
            {"devices", devices}};
  return info;
}

Json matmul_probe(double seconds) {
  Json matmul = Json::array();
  matmul.push_back(matmul_benchmark(seconds, torch::kCPU));
  if (torch::cuda::is_available()) {
    matmul.push_back(matmul_benchmark(seconds, torch::Device(torch::kCUDA, 0), 4096));
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

}  // namespace

const void* extension(const char* id) {
  static const gpusweep_ext_phase_timers timers = {sizeof(gpusweep_ext_phase_timers), 0,
                                                   &enable_phase_timers};
  static const gpusweep_ext_matmul_probe probe = {sizeof(gpusweep_ext_matmul_probe), 0,
                                                  &measure_matmul};
  if (std::strcmp(id, GPUSWEEP_EXT_PHASE_TIMERS) == 0) return &timers;
  if (std::strcmp(id, GPUSWEEP_EXT_MATMUL_PROBE) == 0) return &probe;
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

double peak_memory_bytes(const torch::Device& device) {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<double>(
        stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
            .peak);
  }
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
