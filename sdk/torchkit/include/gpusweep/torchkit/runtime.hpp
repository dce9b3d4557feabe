// What the plugin runs on (LibTorch version and build, BLAS, threads, CUDA
// devices) and what a trial used (peak memory), for the host's tables.
#pragma once

#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <optional>

namespace gpusweep::torchkit {

// {"torch_version", "torch_library" (the file LibTorch was loaded from),
//  "cpu_capability" (the kernels ATen dispatches to: AVX2, AVX512, ...),
//  "cuda_build" (torchkit compiled with its CUDA paths), "cuda": {"torch_cuda",
//  "torch_cudnn" (what LibTorch was built for), "toolkit" (the headers
//  torchkit was compiled against), "driver_cuda" ("" without a driver)},
//  "cuda_available", "blas", "threads", "interop_threads", "devices": [...]}
Json runtime_info();

// The matmul peak of this process: matmul_benchmark() for about `seconds`
// on the CPU, and on a GPU when CUDA is available (a JSON array): in a
// trial's process (last_trial_settings) on its device and, where it runs
// there, in its autocast dtype (bf16, fp16); else float32 and cuda:0.
Json matmul_probe(double seconds);

// A CUDA device's 16-byte UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx",
// the form NVML, nvidia-smi and CUDA_VISIBLE_DEVICES use.
std::string gpu_uuid(const unsigned char* bytes);

// A cap of `bytes` on a device of `device_bytes` as the caching allocator
// takes it: a fraction of the device (at most 1, when the cap is above what
// the device has) and the bytes that fraction allows. invalid_argument for a
// cap or a device size that is not above 0.
struct DeviceMemoryCap {
  double fraction = 1;
  double limit_bytes = 0;
  double device_bytes = 0;
};
DeviceMemoryCap plan_device_memory_cap(double bytes, double device_bytes);

// The ABI 1.1 extensions a torchkit plugin offers (GPUSWEEP_EXT_PHASE_TIMERS:
// switches the phase timers on; GPUSWEEP_EXT_MATMUL_PROBE: matmul_probe();
// GPUSWEEP_EXT_DEVICE_MEMORY_CAP: CUDA's caching allocator capped by its
// per-process memory fraction, SKIPPED for a CPU trial),
// nullptr for any other id. TorchWorkload::extension() returns it, so that
// every plugin built on torchkit offers both.
const void* extension(const char* id);

// The CUDA version the installed NVIDIA driver supports ("13.2"), or "" when
// there is no driver or torchkit was compiled without CUDA. Needs no GPU.
std::string cuda_driver_version();

// The BLAS library actually mapped into this process ("openblas-openmp",
// "reference", "mkl", ...), read from /proc/self/maps; when none is mapped
// (the torch wheel links MKL into libtorch_cpu), LibTorch's BLAS_INFO.
std::string blas_in_use();

// Threads of this process now (/proc/self/task); -1 if unknown. A trial
// that ran parallel regions with threads=N has its OpenMP team alive.
double process_threads();

// Peak memory since the start or the last reset_peak_memory(): the CUDA
// caching allocator's peak of allocated bytes on a CUDA device, the
// process's peak resident set size (VmHWM) on CPU.
double peak_memory_bytes(const torch::Device& device);

// On a CUDA device, the caching allocator's peak of reserved bytes (what it
// took from the driver, cached blocks included) since the start or the last
// reset_peak_memory(): what a memory cap (its per-process fraction) limits,
// where peak_memory_bytes is the peak of the bytes allocated to tensors.
// Nothing on the CPU.
std::optional<double> peak_reserved_bytes(const torch::Device& device);

// On a CUDA device, the bytes the caching allocator has allocated to
// tensors now; nothing on the CPU.
std::optional<double> allocated_bytes(const torch::Device& device);

// Starts the peak over from what is in use now: the CUDA allocator's peak
// counter, or on CPU the process's VmHWM (Linux's /proc/self/clear_refs).
void reset_peak_memory(const torch::Device& device);

}  // namespace gpusweep::torchkit
