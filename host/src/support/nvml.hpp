// NVIDIA's management library (NVML), loaded at run time with dlopen so that
// gpusweep neither links nor needs it: absent means "no GPU monitoring", not
// an error. Only the few functions gpusweep reads are resolved; the ABI used
// is NVML's stable C one (nvmlInit_v2, nvmlDeviceGetCount_v2, ...).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct GpuInfo {
  unsigned index = 0;
  std::string name;
  double memory_total_bytes = 0;
  std::string compute_capability;  // "8.6"; empty when NVML cannot say
  std::string uuid;                // "GPU-8f3c...", as CUDA_VISIBLE_DEVICES takes it; may be empty
};

// One reading of one device. Fields NVML does not support on a device are
// left empty.
struct GpuSample {
  std::optional<double> utilization_pct;  // share of time a kernel ran
  std::optional<double> memory_used_bytes;
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
};

// One of the samples the driver itself takes of a device (at its own period,
// about 1/6 s for utilisation), as nvmlDeviceGetSamples returns them.
struct GpuTimedSample {
  uint64_t time_us = 0;  // CPU wall clock, microseconds since the epoch (NVML's stamp)
  double value = 0;      // percent for the utilisation kinds
};

// What the driver's samples measure (NVML's nvmlSamplingType_t values).
enum class GpuSampleKind : int {
  utilization = 1,  // NVML_GPU_UTILIZATION_SAMPLES: share of time a kernel ran
  memory_utilization =
      2,  // NVML_MEMORY_UTILIZATION_SAMPLES: share of time memory was read or written
};

// The GPUs the NVIDIA kernel driver exposes to this process, by their device
// nodes (/dev/nvidia0, /dev/nvidia1, ...; GPUSWEEP_DEV_DIR overrides /dev,
// for tests): how a run knows that `device: auto` means a GPU where NVML
// cannot load (a container without the driver's `utility` capability),
// without starting CUDA in the host. 0 where there are none.
unsigned nvidia_device_nodes();

class Nvml {
 public:
  // Loads library (default: the driver's libnvidia-ml.so.1; GPUSWEEP_NVML_LIBRARY
  // overrides it, for tests) and initialises it. Returns null with *why set
  // when it is absent or does not initialise.
  static std::unique_ptr<Nvml> load(const std::string& library, std::string* why);
  static std::string default_library();

  // The process-wide instance the runner samples with (loaded once; null
  // without NVML).
  static const Nvml* shared();

  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  std::string driver_version() const;
  unsigned device_count() const;
  std::optional<GpuInfo> device(unsigned index) const;
  std::optional<GpuSample> sample(unsigned index) const;
  // The driver's own samples of a kind on the device stamped after after_us
  // (0: all its buffer holds), oldest first: a poll every 0.5 s sees one
  // reading, these see each driver period. The buffer is finite (a few
  // seconds to tens of seconds), so a caller fetches incrementally, passing
  // the last stamp it has. Empty when nothing is new; none when the library
  // lacks nvmlDeviceGetSamples or the device does not keep that kind.
  std::optional<std::vector<GpuTimedSample>> driver_samples(unsigned index, GpuSampleKind kind,
                                                            uint64_t after_us) const;
  // The GPU memory process pid holds on the device, summed over its
  // contexts (nvmlDeviceGetComputeRunningProcesses_v3, else _v2). None when
  // the library lacks both, the process has no context there, or the driver
  // cannot say: in a container NVML lists the host's pids, so a worker's own
  // pid may not appear.
  std::optional<double> process_memory_bytes(unsigned index, pid_t pid) const;
  // NVML's index of the device at this PCI bus id ("0000:65:00.0", as CUDA
  // writes it): the same device whatever CUDA_VISIBLE_DEVICES and CUDA's
  // ordering made of its number in the trial. None when NVML does not know
  // it (or the driver lacks the lookup).
  std::optional<unsigned> index_of_pci_bus_id(const std::string& bus_id) const;
  const std::string& library() const { return library_; }

 private:
  struct Api;
  Nvml(void* handle, std::unique_ptr<Api> api, std::string library);
  void* handle_;
  std::unique_ptr<Api> api_;
  std::string library_;
};

}  // namespace gpusweep::host
