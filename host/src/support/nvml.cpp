// NVML through dlopen; see nvml.hpp.
#include "support/nvml.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace gpusweep::host {

namespace {

// NVML's C types, as its nvml.h declares them (an int enum for results, an
// opaque pointer for devices, plain structs of unsigned values).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kClockSm = 1;         // NVML_CLOCK_SM

template <class F>
F resolve(void* handle, const char* name) {
  return reinterpret_cast<F>(::dlsym(handle, name));
}

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*device_count)(unsigned*);
  nvmlReturn_t (*handle_by_index)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*driver_version)(char*, unsigned);
  // Optional: older drivers or some devices lack them.
  nvmlReturn_t (*compute_capability)(nvmlDevice_t, int*, int*);
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*);
  nvmlReturn_t (*handle_by_pci_bus_id)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*index)(nvmlDevice_t, unsigned*);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned);
};

std::string Nvml::default_library() {
  const char* env = std::getenv("GPUSWEEP_NVML_LIBRARY");
  return env != nullptr && *env != '\0' ? env : "libnvidia-ml.so.1";
}

std::unique_ptr<Nvml> Nvml::load(const std::string& library, std::string* why) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    if (why != nullptr) {
      *why = library + " not found (no NVIDIA driver on this machine" +
             std::string(err != nullptr ? ": " + std::string(err) : std::string()) + ")";
    }
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->init = resolve<decltype(api->init)>(handle, "nvmlInit_v2");
  api->shutdown = resolve<decltype(api->shutdown)>(handle, "nvmlShutdown");
  api->error_string = resolve<decltype(api->error_string)>(handle, "nvmlErrorString");
  api->device_count = resolve<decltype(api->device_count)>(handle, "nvmlDeviceGetCount_v2");
  api->handle_by_index =
      resolve<decltype(api->handle_by_index)>(handle, "nvmlDeviceGetHandleByIndex_v2");
  api->name = resolve<decltype(api->name)>(handle, "nvmlDeviceGetName");
  api->memory = resolve<decltype(api->memory)>(handle, "nvmlDeviceGetMemoryInfo");
  api->utilization = resolve<decltype(api->utilization)>(handle, "nvmlDeviceGetUtilizationRates");
  api->driver_version =
      resolve<decltype(api->driver_version)>(handle, "nvmlSystemGetDriverVersion");
  api->compute_capability =
      resolve<decltype(api->compute_capability)>(handle, "nvmlDeviceGetCudaComputeCapability");
  api->temperature = resolve<decltype(api->temperature)>(handle, "nvmlDeviceGetTemperature");
  api->power = resolve<decltype(api->power)>(handle, "nvmlDeviceGetPowerUsage");
  api->clock = resolve<decltype(api->clock)>(handle, "nvmlDeviceGetClockInfo");
  api->handle_by_pci_bus_id =
      resolve<decltype(api->handle_by_pci_bus_id)>(handle, "nvmlDeviceGetHandleByPciBusId_v2");
  api->index = resolve<decltype(api->index)>(handle, "nvmlDeviceGetIndex");
  api->uuid = resolve<decltype(api->uuid)>(handle, "nvmlDeviceGetUUID");
  const char* missing = nullptr;
  if (api->init == nullptr)
    missing = "nvmlInit_v2";
  else if (api->device_count == nullptr)
    missing = "nvmlDeviceGetCount_v2";
  else if (api->handle_by_index == nullptr)
    missing = "nvmlDeviceGetHandleByIndex_v2";
  else if (api->name == nullptr)
    missing = "nvmlDeviceGetName";
  else if (api->memory == nullptr)
    missing = "nvmlDeviceGetMemoryInfo";
  else if (api->utilization == nullptr)
    missing = "nvmlDeviceGetUtilizationRates";
  else if (api->driver_version == nullptr)
    missing = "nvmlSystemGetDriverVersion";
  if (missing != nullptr) {
    if (why != nullptr) *why = library + " lacks " + missing + " (driver too old?)";
    ::dlclose(handle);
    return nullptr;
  }
  const nvmlReturn_t rc = api->init();
  if (rc != kSuccess) {
    if (why != nullptr) {
      *why = library + ": nvmlInit_v2 failed (" +
             (api->error_string != nullptr ? std::string(api->error_string(rc))
                                           : "error " + std::to_string(rc)) +
             ")";
    }
    ::dlclose(handle);
    return nullptr;
  }
  return std::unique_ptr<Nvml>(new Nvml(handle, std::move(api), library));
}

const Nvml* Nvml::shared() {
  static std::once_flag once;
  static std::unique_ptr<Nvml> instance;
  std::call_once(once, [] { instance = load(default_library(), nullptr); });
  return instance.get();
}

Nvml::Nvml(void* handle, std::unique_ptr<Api> api, std::string library)
    : handle_(handle), api_(std::move(api)), library_(std::move(library)) {}

Nvml::~Nvml() {
  if (api_->shutdown != nullptr) api_->shutdown();
  ::dlclose(handle_);
}

std::string Nvml::driver_version() const {
  char buf[96] = {0};
  if (api_->driver_version(buf, sizeof buf) != kSuccess) return {};
  return buf;
}

unsigned Nvml::device_count() const {
  unsigned n = 0;
  return api_->device_count(&n) == kSuccess ? n : 0;
}

std::optional<GpuInfo> Nvml::device(unsigned index) const {
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(index, &dev) != kSuccess) return std::nullopt;
  GpuInfo g;
  g.index = index;
  char name[96] = {0};
  if (api_->name(dev, name, sizeof name) == kSuccess) g.name = name;
  nvmlMemory_t mem{};
  if (api_->memory(dev, &mem) == kSuccess) g.memory_total_bytes = static_cast<double>(mem.total);
  int major = 0, minor = 0;
  if (api_->compute_capability != nullptr &&
      api_->compute_capability(dev, &major, &minor) == kSuccess) {
    g.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  }
  char uuid[96] = {0};
  if (api_->uuid != nullptr && api_->uuid(dev, uuid, sizeof uuid) == kSuccess) g.uuid = uuid;
  return g;
}

std::optional<GpuSample> Nvml::sample(unsigned index) const {
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(index, &dev) != kSuccess) return std::nullopt;
  GpuSample s;
  nvmlUtilization_t util{};
  if (api_->utilization(dev, &util) == kSuccess) s.utilization_pct = util.gpu;
  nvmlMemory_t mem{};
  if (api_->memory(dev, &mem) == kSuccess) s.memory_used_bytes = static_cast<double>(mem.used);
  unsigned v = 0;
  if (api_->clock != nullptr && api_->clock(dev, kClockSm, &v) == kSuccess) s.sm_clock_mhz = v;
  if (api_->temperature != nullptr && api_->temperature(dev, kTemperatureGpu, &v) == kSuccess) {
    s.temperature_c = v;
  }
  if (api_->power != nullptr && api_->power(dev, &v) == kSuccess) s.power_w = v / 1000.0;
  return s;
}

std::optional<unsigned> Nvml::index_of_pci_bus_id(const std::string& bus_id) const {
  if (api_->handle_by_pci_bus_id == nullptr || api_->index == nullptr || bus_id.empty()) {
    return std::nullopt;
  }
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_pci_bus_id(bus_id.c_str(), &dev) != kSuccess) return std::nullopt;
  unsigned index = 0;
  if (api_->index(dev, &index) != kSuccess) return std::nullopt;
  return index;
}

unsigned nvidia_device_nodes() {
  const char* dir = std::getenv("GPUSWEEP_DEV_DIR");
  std::error_code ec;
  unsigned n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir != nullptr ? dir : "/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
        name.find_first_not_of("0123456789", 6) == std::string::npos) {
      ++n;
    }
  }
  return n;
}

}  // namespace gpusweep::host
