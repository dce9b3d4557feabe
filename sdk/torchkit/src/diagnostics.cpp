// Step-phase timing and the matmul probe; see diagnostics.hpp.
#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/settings.hpp>

#include <ATen/Parallel.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>

#if defined(GPUSWEEP_TORCH_CUDA)
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include <algorithm>
#include <iterator>
#include <set>

namespace gpusweep::torchkit {

namespace {

using Clock = std::chrono::steady_clock;

struct Totals {
  std::array<double, static_cast<size_t>(Phase::count)> seconds{};
  int64_t host_syncs = 0;
};

// One trial per worker process, one training thread: process-wide totals,
// with the innermost open timer of the training thread.
Totals& totals() {
  static Totals t;
  return t;
}
thread_local PhaseTimer* innermost = nullptr;

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::input_wait:
      return "input_wait";
    case Phase::host_to_device:
      return "host_to_device";
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
      return "optimizer";
    case Phase::host_sync:
      return "host_sync";
    case Phase::count:
      break;
  }
  return "?";
}

namespace {
std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> enabled{false};
  return enabled;
}
}  // namespace

bool diagnostics_enabled() { return enabled_flag().load(std::memory_order_relaxed); }

void enable_diagnostics() { enabled_flag().store(true); }

namespace {
thread_local HostSyncCount* sync_count = nullptr;
thread_local int captures = 0;
}  // namespace

HostSyncCount::HostSyncCount() : outer_(sync_count) { sync_count = this; }
HostSyncCount::~HostSyncCount() { sync_count = outer_; }

CaptureScope::CaptureScope() { ++captures; }
CaptureScope::~CaptureScope() { --captures; }

PhaseTimer::PhaseTimer(Phase phase, const torch::Device& device) {
  if (phase == Phase::host_sync && sync_count != nullptr) ++sync_count->count_;
  if (!diagnostics_enabled() || captures > 0) return;
  active_ = true;
  phase_ = phase;
  device_ = device;
  synchronize(device_);
  parent_ = innermost;
  innermost = this;
  t0_ = Clock::now();
}

PhaseTimer::~PhaseTimer() {
  if (!active_) return;
  try {
    synchronize(device_);
  } catch (...) {
    // A failing device fails the step anyway; a destructor must not throw.
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
  Totals& t = totals();
  t.seconds[static_cast<size_t>(phase_)] += elapsed - children_s_;
  if (phase_ == Phase::host_sync) ++t.host_syncs;
  if (parent_ != nullptr) parent_->children_s_ += elapsed;
  innermost = parent_;
}

Metrics phase_stats() {
  Metrics m;
  if (!diagnostics_enabled()) return m;
  const Totals& t = totals();
  static_assert(std::size(stat::kPhases) == static_cast<size_t>(Phase::count),
                "a phase's stat name for every phase");
  for (int i = 0; i < static_cast<int>(Phase::count); ++i) {
    m[stat::kPhases[i]] = t.seconds[static_cast<size_t>(i)];
  }
  m[stat::host_syncs] = static_cast<double>(t.host_syncs);
  return m;
}

Json matmul_benchmark(double seconds, const torch::Device& device, int64_t n,
                      torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  const torch::Tensor a = torch::randn({n, n}, opts);
  const torch::Tensor b = torch::randn({n, n}, opts);
  torch::Tensor c = torch::mm(a, b);  // warm up: BLAS buffers, thread team, CUDA context
  synchronize(device);
  int64_t products = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    torch::mm_out(c, a, b);
    ++products;
    if (device.is_cuda() && products % 16 != 0) continue;  // queue some work between syncs
    synchronize(device);
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < seconds);
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) *
                       static_cast<double>(n) * static_cast<double>(products);
  return Json{{"device", device.str()},
              {"n", n},
              {"dtype", dtype == torch::kBFloat16 ? "bfloat16"
                        : dtype == torch::kHalf   ? "float16"
                                                  : "float32"},
              {"threads", at::get_num_threads()},
              {"seconds", elapsed},
              {"products", products},
              {"gflops", flops / elapsed / 1e9}};
}

struct DeviceTimer::Events {
#if defined(GPUSWEEP_TORCH_CUDA)
  // Spans whose events are not read yet; completed ones are folded into
  // done_s as spans start, so that a long trial keeps only a few.
  std::deque<std::pair<c10::cuda::CUDAEvent, c10::cuda::CUDAEvent>> pending;
  double done_s = 0;

  // each: where each span's seconds go too (null: nowhere).
  void fold(bool wait, std::vector<double>* each) {
    while (!pending.empty()) {
      auto& [begin, end] = pending.front();
      if (wait) end.synchronize();
      if (!end.query()) return;
      const double s = 1e-3 * static_cast<double>(begin.elapsed_time(end));
      done_s += s;
      if (each != nullptr) each->push_back(s);
      pending.pop_front();
    }
  }
#endif
};

DeviceTimer::DeviceTimer(const torch::Device& device, bool keep_each)
    : device_(device), keep_each_(keep_each) {
  if (device_.is_cuda()) {
#if defined(GPUSWEEP_TORCH_CUDA)
    events_ = std::make_unique<Events>();
#else
    throw std::runtime_error("DeviceTimer(" + device_.str() +
                             "): this torchkit was compiled without CUDA (GPUSWEEP_TORCH_CUDA)");
#endif
  }
}

DeviceTimer::~DeviceTimer() = default;  // Events is complete here

void DeviceTimer::start() {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (events_ != nullptr) {
    events_->fold(/*wait=*/false, keep_each_ ? &each_s_ : nullptr);
    events_->pending.emplace_back(c10::cuda::CUDAEvent(cudaEventDefault),
                                  c10::cuda::CUDAEvent(cudaEventDefault));
    events_->pending.back().first.record(
        c10::cuda::getCurrentCUDAStream(device_.has_index() ? device_.index() : -1));
    return;
  }
#endif
  t0_ = std::chrono::steady_clock::now();
}

void DeviceTimer::stop() {
  ++spans_;
#if defined(GPUSWEEP_TORCH_CUDA)
  if (events_ != nullptr) {
    events_->pending.back().second.record(
        c10::cuda::getCurrentCUDAStream(device_.has_index() ? device_.index() : -1));
    return;
  }
#endif
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  host_s_ += s;
  if (keep_each_) each_s_.push_back(s);
}

double DeviceTimer::total_seconds() {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (events_ != nullptr) {
    events_->fold(/*wait=*/true, keep_each_ ? &each_s_ : nullptr);
    return events_->done_s;
  }
#endif
  return host_s_;
}

std::vector<double> DeviceTimer::each_seconds() {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (events_ != nullptr) events_->fold(/*wait=*/true, keep_each_ ? &each_s_ : nullptr);
#endif
  return each_s_;
}

namespace {
std::atomic<bool>& window_open() {
  static std::atomic<bool> open{false};
  return open;
}
std::atomic<bool>& window_began() {
  static std::atomic<bool> began{false};
  return began;
}
}  // namespace

void begin_measured_window() {
  window_began().store(true);
  window_open().store(true);
}

void end_measured_window() { window_open().store(false); }

bool in_measured_window() { return window_open().load(std::memory_order_relaxed); }

bool measured_window_began() { return window_began().load(std::memory_order_relaxed); }

void TransferTimes::add_stats(Metrics& m, double copies_per_step) {
  DeviceTimer* timer = measured_window_began() ? inside_.get() : outside_.get();
  if (timer == nullptr || timer->spans() == 0) return;
  const double total = timer->total_seconds();
  const auto copies = static_cast<double>(timer->spans());
  m["host_to_device_s"] = total;
  m["host_to_device_copies"] = copies;
  m[stat::host_to_device_s_per_step] = total / copies * copies_per_step;
}

double union_length(std::vector<std::pair<uint64_t, uint64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0;
  uint64_t begin = 0, end = 0;
  bool open = false;
  for (const auto& [b, e] : spans) {
    if (e <= b) continue;
    if (open && b <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += static_cast<double>(end - begin);
    begin = b;
    end = e;
    open = true;
  }
  if (open) total += static_cast<double>(end - begin);
  return total;
}

DeviceBusyProbe::DeviceBusyProbe(const torch::Device& device) : device_(device) {}

DeviceBusyProbe::~DeviceBusyProbe() {
  if (running_) (void)stop();
}

bool DeviceBusyProbe::start() {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (!device_.is_cuda() || running_) return running_;
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  // Another profiler in the process (a Python module's own): prepareProfiler
  // would cancel its trace. None is started then.
  if (torch::profiler::impl::profilerEnabled()) return false;
  timers_were_on_ = diagnostics_enabled();
  try {
    synchronize(device_);
    const ProfilerConfig config(ProfilerState::KINETO);
    const std::set<ActivityType> activities = {ActivityType::CUDA};
    prof::prepareProfiler(config, activities);
    enabled_flag().store(false);  // the phase timers' syncs would idle the device
    prof::enableProfiler(config, activities);
    running_ = true;
  } catch (const std::exception&) {
    enabled_flag().store(timers_were_on_);  // no profiler (another holds it, no CUPTI)
  }
  return running_;
#else
  return false;
#endif
}

std::optional<double> DeviceBusyProbe::stop() {
#if defined(GPUSWEEP_TORCH_CUDA)
  if (!running_) return std::nullopt;
  running_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  try {
    synchronize(device_);
  } catch (const std::exception&) {
    // The profiler is stopped below all the same.
  }
  try {
    const auto result = torch::autograd::profiler::disableProfiler();
    for (const auto& e : result->events()) {
      // Kernels, copies and memsets only: Kineto puts sync spans (CPU wait)
      // and annotations on the device too. libkineto::ActivityType's values,
      // fixed for serialised traces: GPU_MEMCPY 3, GPU_MEMSET 4,
      // CONCURRENT_KERNEL 5.
      const uint8_t kind = e.activityType();
      if (kind < 3 || kind > 5 || e.deviceType() != c10::DeviceType::CUDA) continue;
      if (e.deviceIndex() >= 0 && e.deviceIndex() != device_.index()) continue;
      spans.emplace_back(e.startNs(), e.endNs());
    }
  } catch (const std::exception&) {
    spans.clear();
  }
  enabled_flag().store(timers_were_on_);
  if (spans.empty()) return std::nullopt;
  return 1e-9 * union_length(std::move(spans));
#else
  return std::nullopt;
#endif
}

}  // namespace gpusweep::torchkit
