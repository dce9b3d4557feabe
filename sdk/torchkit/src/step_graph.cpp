// CUDA graphs for a training step; see step_graph.hpp.
#include <gpusweep/torchkit/step_graph.hpp>

#include <gpusweep/stat_names.hpp>
#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>

#if defined(GPUSWEEP_TORCH_CUDA)
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace gpusweep::torchkit {

namespace {

// The live StepGraphs, for stats_for().
std::mutex& graphs_mutex() {
  static std::mutex m;
  return m;
}
std::vector<const StepGraph*>& graphs() {
  static std::vector<const StepGraph*> all;
  return all;
}

// The hooks a capture on this thread records into, if any.
thread_local ReplayHooks* recording = nullptr;

std::string shape_of(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type();
  return out.str();
}

}  // namespace

#if defined(GPUSWEEP_TORCH_CUDA)
struct StepGraph::Cuda {
  explicit Cuda(const torch::Device& d)
      : device(d.has_index() ? d : torch::Device(torch::kCUDA, 0)),
        side(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index())) {}
  torch::Device device;
  c10::cuda::CUDAStream side;
  at::cuda::CUDAGraph graph;

  void replay() {
    c10::cuda::CUDAGuard on_device(device);
    graph.replay();
  }

  // Runs f on the side stream, ordered after the current stream's work and
  // before its next (as torch.cuda.graphs' warmup does).
  template <class F>
  void on_side_stream(F&& f) {
    c10::cuda::CUDAGuard on_device(device);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
    at::cuda::CUDAEvent before;
    before.record(current);
    before.block(side);
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      f();
    }
    at::cuda::CUDAEvent after;
    after.record(side);
    after.block(current);
  }
};
#else
struct StepGraph::Cuda {};
#endif

StepGraph::StepGraph(const Settings& settings, std::string what)
    : settings_(settings), what_(std::move(what)), enabled_(settings.cuda_graphs) {
  std::lock_guard<std::mutex> lock(graphs_mutex());
  graphs().push_back(this);
}

StepGraph::~StepGraph() {
  std::lock_guard<std::mutex> lock(graphs_mutex());
  auto& all = graphs();
  all.erase(std::remove(all.begin(), all.end(), this), all.end());
}

void ReplayHooks::add(std::function<void()> hook) {
  if (recording != nullptr) recording->hooks_.push_back(std::move(hook));
}

ReplayHooks::Recording::Recording(ReplayHooks& into) : previous_(recording) { recording = &into; }

ReplayHooks::Recording::~Recording() { recording = previous_; }

void ReplayHooks::run() const {
  for (const auto& hook : hooks_) hook();
}

Metrics StepGraph::stats_for(const Settings& settings) {
  if (!settings.cuda_graphs) return {};
  std::lock_guard<std::mutex> lock(graphs_mutex());
  double captured = 0;
  double replays = 0;
  double capture_s = 0;
  for (const StepGraph* g : graphs()) {
    if (&g->settings_ != &settings) continue;
    captured += g->captured_ ? 1.0 : 0.0;
    replays += static_cast<double>(g->replays_);
    capture_s += g->capture_s_;
  }
  return {{stat::cuda_graphs_captured, captured},
          {"cuda_graph_replays", replays},
          {"cuda_graph_capture_s", capture_s},
          {"cuda_graph_pool_bytes", pool_bytes_for_locked(settings)},
          {"zero_grad_in_place", 1.0}};
}

double StepGraph::pool_bytes_for(const Settings& settings) {
  if (!settings.cuda_graphs) return 0;
  std::lock_guard<std::mutex> lock(graphs_mutex());
  return pool_bytes_for_locked(settings);
}

double StepGraph::pool_bytes_for_locked(const Settings& settings) {
  double bytes = 0;
  for (const StepGraph* g : graphs()) {
    if (&g->settings_ == &settings) bytes += g->pool_bytes_;
  }
  return bytes;
}

void StepGraph::check_captured(const Settings& settings) {
  if (!settings.cuda_graphs) return;
  std::lock_guard<std::mutex> lock(graphs_mutex());
  bool ran = false;
  for (const StepGraph* g : graphs()) {
    if (&g->settings_ != &settings || g->calls_ == 0) continue;
    ran = true;
    if (!g->captured_) {
      throw Skipped("cuda_graphs: " + g->what_ + " was not captured before the measured blocks (" +
                    std::to_string(g->calls_) + " eager call(s); it is captured at call " +
                    std::to_string(kWarmupCalls + 1) +
                    "): raise measure.warmup_steps so that every captured part runs " +
                    std::to_string(kWarmupCalls + 1) +
                    " times in warmup, or its measured steps would run eagerly");
    }
  }
  if (!ran) {
    throw Skipped(
        "cuda_graphs: no step of this workload was captured before the measured blocks (none "
        "ran a StepGraph in warmup): raise measure.warmup_steps to at least " +
        std::to_string(kWarmupCalls + 1) + ", or the workload does not capture its step");
  }
}

torch::Tensor StepGraph::input(size_t slot, const torch::Tensor& value) {
  if (!enabled_) return value;
  if (slot >= inputs_.size()) inputs_.resize(slot + 1);
  torch::Tensor& kept = inputs_[slot];
  if (!kept.defined()) {
    kept = value.to(settings_.device, /*non_blocking=*/false, /*copy=*/true);
    return kept;
  }
  if (kept.sizes() != value.sizes() || kept.scalar_type() != value.scalar_type()) {
    throw Skipped("cuda_graphs: " + what_ + "'s input " + std::to_string(slot) + " changed from " +
                  shape_of(kept) + " to " + shape_of(value) +
                  "; a captured graph replays fixed shapes");
  }
  kept.copy_(value, /*non_blocking=*/settings_.non_blocking);
  return kept;
}

void StepGraph::run(const std::function<void()>& device_work) {
  if (!enabled_) {
    device_work();
    return;
  }
  const int64_t call = calls_++;
  if (call == 0) {
    dry_run(device_work);
  } else if (call < kWarmupCalls) {
    warm_up(device_work);
  } else if (call == kWarmupCalls) {
    // Capturing resets the allocator's peak, which the measured window's
    // peak is read from: only in warmup (check_captured asks for it).
    if (in_measured_window()) {
      throw Skipped("cuda_graphs: " + what_ +
                    " would be captured inside the measured blocks (its first call came after "
                    "warmup): raise measure.warmup_steps so that it runs " +
                    std::to_string(kWarmupCalls + 1) + " times in warmup");
    }
    capture(device_work);
  } else {
#if defined(GPUSWEEP_TORCH_CUDA)
    cuda_->replay();
    hooks_.run();
    ++replays_;
#endif
  }
}

void StepGraph::dry_run(const std::function<void()>& device_work) {
  HostSyncCount syncs;
  device_work();
  if (syncs.count() > 0) {
    throw Skipped("cuda_graphs: " + what_ + " reads a device value on the host inside the step (" +
                  std::to_string(syncs.count()) +
                  " host sync(s) in a dry run: a loss read, the fp16 scaler's check, a copy to "
                  "the host); a captured graph would replay the value read at capture. Move the "
                  "read after the step (observe_loss does)");
  }
  if (!settings_.device.is_cuda()) {
    throw Skipped("cuda_graphs captures CUDA kernels; device is " + settings_.device.str());
  }
#if defined(GPUSWEEP_TORCH_CUDA)
  cuda_ = std::make_unique<Cuda>(settings_.device);
#else
  throw Skipped("cuda_graphs needs a CUDA build of LibTorch; this plugin was built without one");
#endif
}

void StepGraph::warm_up(const std::function<void()>& device_work) {
#if defined(GPUSWEEP_TORCH_CUDA)
  cuda_->on_side_stream(device_work);
#else
  device_work();
#endif
}

void StepGraph::capture(const std::function<void()>& device_work) {
#if defined(GPUSWEEP_TORCH_CUDA)
  const auto t0 = std::chrono::steady_clock::now();
  synchronize(settings_.device);
  // What the captured step allocates and frees goes to the graph's pool
  // and is never allocated again: the capture's peak above what stays
  // allocated after it (the static outputs, which the measured peak holds).
  reset_peak_memory(settings_.device);
  try {
    cuda_->on_side_stream([&] {
      CaptureScope scope;
      ReplayHooks::Recording counted(hooks_);
      // Thread-local mode: the input pipeline's threads may allocate
      // (pinned buffers) while this one captures.
      cuda_->graph.capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);
      try {
        device_work();
      } catch (...) {
        try {
          cuda_->graph.capture_end();
        } catch (...) {
          // The step's own error says more than the aborted capture's.
        }
        throw;
      }
      cuda_->graph.capture_end();
    });
  } catch (const Skipped&) {
    throw;
  } catch (const std::exception& e) {
    throw Skipped("cuda_graphs: " + what_ + " could not be captured: " + e.what());
  }
  pool_bytes_ = std::max(
      0.0, peak_memory_bytes(settings_.device) - allocated_bytes(settings_.device).value_or(0));
  // Capture queued nothing: this step's work is the first replay.
  cuda_->replay();
  synchronize(settings_.device);
  capture_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  captured_ = true;
#else
  (void)device_work;
  throw std::logic_error("StepGraph::capture without CUDA");
#endif
}

}  // namespace gpusweep::torchkit
