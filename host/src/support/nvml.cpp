// NVML through dlopen; see nvml.hpp.
#include "support/nvml.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace gpusweep::host {

namespace {

// NVML's C types, as its nvml.h declares them (an int enum for results, an
// opaque pointer for devices, plain structs of unsigned values).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kNotFound = 6;          // NVML_ERROR_NOT_FOUND: no sample newer than asked
constexpr nvmlReturn_t kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
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
// nvmlDeviceGetSamples' value: a union whose member nvmlValueType_t names
// (NVML_VALUE_TYPE_DOUBLE = 0, UNSIGNED_INT, UNSIGNED_LONG, UNSIGNED_LONG_LONG,
// SIGNED_LONG_LONG, and in newer headers SIGNED_INT = 5, UNSIGNED_SHORT = 6;
// all 8 bytes or fewer, so the union stays 8 bytes).
using nvmlValueType_t = int;
union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};
struct nvmlSample_t {
  unsigned long long timeStamp;  // CPU wall clock, microseconds
  nvmlValue_t sampleValue;
};
static_assert(sizeof(nvmlSample_t) == 16, "nvmlSample_t as nvml.h lays it out");
// nvmlProcessInfo_t of nvmlDeviceGetComputeRunningProcesses_v2 and _v3 (the
// unversioned function takes an older struct without the instance ids).
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes; NVML_VALUE_NOT_AVAILABLE when unknown
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t as nvml.h lays it out");
constexpr unsigned long long kValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE

double sample_value(nvmlValueType_t type, const nvmlValue_t& v) {
  switch (type) {
    case 0:
      return v.dVal;
    case 1:
      return v.uiVal;
    case 2:
      return static_cast<double>(v.ulVal);
    case 3:
      return static_cast<double>(v.ullVal);
    case 4:
      return static_cast<double>(v.sllVal);
    case 5:
      return v.siVal;
    case 6:
      return v.usVal;
    default:
      return v.uiVal;  // NVML documents utilisation samples as unsigned int
  }
}

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
  nvmlReturn_t (*samples)(nvmlDevice_t, int, unsigned long long, nvmlValueType_t*, unsigned*,
                          nvmlSample_t*);
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*);
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
  api->samples = resolve<decltype(api->samples)>(handle, "nvmlDeviceGetSamples");
  api->processes =
      resolve<decltype(api->processes)>(handle, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (api->processes == nullptr) {
    api->processes =
        resolve<decltype(api->processes)>(handle, "nvmlDeviceGetComputeRunningProcesses_v2");
  }
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

std::optional<std::vector<GpuTimedSample>> Nvml::driver_samples(unsigned index, GpuSampleKind kind,
                                                                uint64_t after_us) const {
  if (api_->samples == nullptr) return std::nullopt;
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(index, &dev) != kSuccess) return std::nullopt;
  // NVML's two calls: without a buffer for the count, then with one.
  nvmlValueType_t type = 0;
  unsigned count = 0;
  nvmlReturn_t rc = api_->samples(dev, static_cast<int>(kind), after_us, &type, &count, nullptr);
  if (rc == kNotFound) return std::vector<GpuTimedSample>{};
  if (rc != kSuccess) return std::nullopt;
  if (count == 0) return std::vector<GpuTimedSample>{};
  // Room for samples the driver takes between the two calls (a driver
  // whose count is a snapshot answers INSUFFICIENT_SIZE otherwise).
  std::vector<nvmlSample_t> buf(count + 16);
  count = static_cast<unsigned>(buf.size());
  rc = api_->samples(dev, static_cast<int>(kind), after_us, &type, &count, buf.data());
  if (rc == kNotFound) return std::vector<GpuTimedSample>{};
  if (rc != kSuccess) return std::nullopt;
  std::vector<GpuTimedSample> out;
  out.reserve(std::min<size_t>(count, buf.size()));
  for (size_t i = 0; i < std::min<size_t>(count, buf.size()); ++i) {
    // Some drivers fill unused slots with zero stamps; only new ones count.
    if (buf[i].timeStamp <= after_us) continue;
    out.push_back({buf[i].timeStamp, sample_value(type, buf[i].sampleValue)});
  }
  std::sort(out.begin(), out.end(),
            [](const GpuTimedSample& a, const GpuTimedSample& b) { return a.time_us < b.time_us; });
  return out;
}

std::optional<double> Nvml::process_memory_bytes(unsigned index, pid_t pid) const {
  if (api_->processes == nullptr) return std::nullopt;
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_index(index, &dev) != kSuccess) return std::nullopt;
  unsigned count = 0;
  nvmlReturn_t rc = api_->processes(dev, &count, nullptr);
  // Success here means no process at all; with some, NVML answers
  // INSUFFICIENT_SIZE and their count.
  if (rc != kInsufficientSize || count == 0) return std::nullopt;
  // Room for processes that start between the two calls.
  std::vector<nvmlProcessInfo_t> infos(count + 8);
  count = static_cast<unsigned>(infos.size());
  if (api_->processes(dev, &count, infos.data()) != kSuccess) return std::nullopt;
  std::optional<double> bytes;
  for (size_t i = 0; i < std::min<size_t>(count, infos.size()); ++i) {
    const auto& p = infos[i];
    if (static_cast<pid_t>(p.pid) != pid || p.usedGpuMemory == kValueNotAvailable) continue;
    bytes = bytes.value_or(0) + static_cast<double>(p.usedGpuMemory);
  }
  return bytes;
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
