// Step-phase timing for `gpusweep diagnose`: torchkit's input pipeline,
// gradient step and loss reads (and plugins, around their forward pass) open
// a PhaseTimer; when the worker runs a diagnose trial (it switches the timers
// on through the ABI's phase-timer extension, see extension() in
// torch_workload.hpp) the time spent in each phase is added up and reported by
// TorchWorkload::stats() as phase_<name>_s plus host_syncs. Off, a timer is
// one branch on a cached flag: ordinary trials are not perturbed.
#pragma once

#include <gpusweep/workload.hpp>

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace gpusweep::torchkit {

enum class Phase : int {
  input_wait = 0,  // waiting for (or producing) the next batch on the host
  host_to_device,  // copying a batch to the device
  forward,         // forward pass and loss
  backward,        // loss.backward()
  optimizer,       // optimiser step and clearing gradients
  host_sync,       // reading a device value on the host (loss.item(), .to(kCPU))
  count
};

const char* phase_name(Phase p);

// True once enable_diagnostics() was called: this process runs a diagnose
// trial. Off by default.
bool diagnostics_enabled();

// Switches the phase timers on for the rest of the process (the worker calls
// it through GPUSWEEP_EXT_PHASE_TIMERS before creating a diagnose trial).
void enable_diagnostics();

// Times one phase for its lifetime. Nested timers are subtracted from the
// enclosing one, so that a host read inside the optimiser counts once, as a
// sync. On a CUDA device the device is synchronised at both edges while
// diagnosing, so that asynchronous work is charged to the phase that queued
// it (diagnose serialises the step on purpose; sweeps never do).
class PhaseTimer {
 public:
  PhaseTimer(Phase phase, const torch::Device& device);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  bool active_ = false;
  Phase phase_ = Phase::count;
  torch::Device device_{torch::kCPU};
  std::chrono::steady_clock::time_point t0_;
  double children_s_ = 0;
  PhaseTimer* parent_ = nullptr;
};

// Counts the host syncs (PhaseTimers of Phase::host_sync) opened on this
// thread for its lifetime, diagnosing or not: StepGraph's dry run.
class HostSyncCount {
 public:
  HostSyncCount();
  ~HostSyncCount();
  HostSyncCount(const HostSyncCount&) = delete;
  HostSyncCount& operator=(const HostSyncCount&) = delete;
  int64_t count() const { return count_; }

 private:
  friend class PhaseTimer;
  int64_t count_ = 0;
  HostSyncCount* outer_ = nullptr;
};

// Marks this thread as capturing a CUDA graph for its lifetime: PhaseTimers
// then neither time nor synchronise (a device sync would end the capture).
class CaptureScope {
 public:
  CaptureScope();
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
};

// The length of the union of [begin, end) spans (overlapping ones counted
// once): a device's busy time from its activity records.
double union_length(std::vector<std::pair<uint64_t, uint64_t>> spans);

// What a CUDA device runs between start() and stop(), from CUDA's activity
// records (LibTorch's profiler with CUDA activities only: no host callbacks
// per op), the phase timers paused meanwhile (their syncs would idle the
// device). stop() waits for the device and returns the time at least one
// of its kernels, copies or memsets ran; nothing on the CPU, where the
// profiler cannot start, or where nothing was recorded.
class DeviceBusyProbe {
 public:
  explicit DeviceBusyProbe(const torch::Device& device);
  ~DeviceBusyProbe();
  DeviceBusyProbe(const DeviceBusyProbe&) = delete;
  DeviceBusyProbe& operator=(const DeviceBusyProbe&) = delete;

  // false where it cannot record: the CPU, a build without CUDA, or the
  // profiler not starting (another holds it, no CUPTI).
  bool start();
  std::optional<double> stop();

 private:
  torch::Device device_;
  bool running_ = false;
  bool timers_were_on_ = false;
};

// Times spans of work on a device without synchronising it: on CUDA, a pair
// of timing events recorded on the device's current stream per span, read
// when total_seconds() is asked (which waits for the last one); on the CPU,
// whose ops finish before they return, the host clock. For statistics that
// a plugin times inside a measured block (dqn's target sync): a host clock
// there would need a device sync, an extra serialisation point the harness
// did not ask for.
class DeviceTimer {
 public:
  // keep_each: every stopped span's seconds kept, in order (each_seconds),
  // besides their total.
  explicit DeviceTimer(const torch::Device& device, bool keep_each = false);
  ~DeviceTimer();
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  void start();
  void stop();
  // Seconds of all stopped spans; waits for their events on CUDA.
  double total_seconds();
  // Each stopped span's seconds, in order (keep_each only; empty else);
  // waits for their events on CUDA.
  std::vector<double> each_seconds();
  int64_t spans() const { return spans_; }

 private:
  struct Events;
  torch::Device device_;
  std::chrono::steady_clock::time_point t0_;
  double host_s_ = 0;
  int64_t spans_ = 0;
  bool keep_each_ = false;
  std::vector<double> each_s_;      // keep_each: the spans read so far
  std::unique_ptr<Events> events_;  // CUDA only
};

// The host's measured windows in this process (one trial per worker
// process): TorchWorkload::begin_measurement and end_measurement mark their
// edges, so that TransferTimes reports the measured steps' copies and not
// warmup's (the first, slowest ones) or an evaluation's.
void begin_measured_window();
void end_measured_window();
bool in_measured_window();
// True once a measured window began in this process.
bool measured_window_began();

// Host-to-device copies timed in every trial on a CUDA device (the
// transfer_time metric), with a DeviceTimer's events: no sync is added to
// the step. Nothing is timed on the CPU, where no batch leaves host memory,
// unless time_on_cpu (the host clock; for tests). Copies inside the host's
// measured windows and those outside (warmup, evaluations) are timed apart.
class TransferTimes {
 public:
  explicit TransferTimes(const torch::Device& device, bool time_on_cpu = false)
      : inside_(device.is_cuda() || time_on_cpu ? std::make_unique<DeviceTimer>(device) : nullptr),
        outside_(device.is_cuda() || time_on_cpu ? std::make_unique<DeviceTimer>(device)
                                                 : nullptr) {}

  // Runs copy() (which queues the copies) between the two events.
  template <class Copy>
  auto time(Copy&& copy) -> decltype(copy()) {
    DeviceTimer* timer = in_measured_window() ? inside_.get() : outside_.get();
    if (timer == nullptr) return copy();
    timer->start();
    auto result = copy();
    timer->stop();
    return result;
  }

  // host_to_device_s (all spans counted), host_to_device_copies and
  // host_to_device_s_per_step (copies_per_step spans make a step), over the
  // measured windows once one began in this process, else over every copy
  // so far (a process that marks no window: a plugin outside the worker);
  // nothing on the CPU or before the first copy counted. Waits for the last
  // counted copy's event.
  void add_stats(Metrics& m, double copies_per_step);

 private:
  std::unique_ptr<DeviceTimer> inside_;   // copies in the measured windows
  std::unique_ptr<DeviceTimer> outside_;  // warmup's and the evaluations'
};

// phase_<name>_s for every phase and host_syncs (the count of host_sync
// timers), accumulated since the process started; empty when not diagnosing.
Metrics phase_stats();

// The matmul throughput of this process on device in dtype (float32 unless
// asked), measured for about `seconds` (n x n by n x n products, 2 n^3 FLOPs
// each): {"device", "n", "dtype", "threads", "seconds", "products", "gflops"}.
Json matmul_benchmark(double seconds, const torch::Device& device, int64_t n = 1024,
                      torch::ScalarType dtype = torch::kFloat);

}  // namespace gpusweep::torchkit
