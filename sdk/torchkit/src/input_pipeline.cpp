// The input pipeline; see input_pipeline.hpp.
#include <gpusweep/torchkit/input_pipeline.hpp>

#include <gpusweep/torchkit/diagnostics.hpp>

#include <time.h>

namespace gpusweep::torchkit {

namespace {
using Clock = std::chrono::steady_clock;

// Batch i's seed: the trial's seed and the index mixed (splitmix64), so that
// batch i is the same whichever worker builds it.
uint64_t batch_seed(uint64_t seed, int64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(index) + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

InputPipeline::InputPipeline(const Settings& settings, Producer producer)
    : settings_(settings),
      producer_(std::move(producer)),
      seed_(settings.seed),
      capacity_(static_cast<size_t>(std::max<int64_t>(1, settings.prefetch))),
      lanes_(static_cast<size_t>(std::max<int64_t>(0, settings.loader_workers))),
      transfers_(settings.device) {
  for (size_t w = 0; w < lanes_.size(); ++w) {
    threads_.emplace_back([this, w] { work(w, static_cast<int64_t>(w)); });
  }
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
}

void InputPipeline::pause() {
  std::unique_lock<std::mutex> lock(mutex_);
  paused_ = true;
  ++pauses_;
  changed_.wait(lock, [&] { return building_ == 0; });
}

void InputPipeline::resume() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paused_ = false;
  }
  changed_.notify_all();
}

Batch InputPipeline::produce(int64_t index) {
  std::mt19937_64 rng(batch_seed(seed_, index));
  Batch batch = producer_(index, rng);
  if (settings_.pin_memory) {
    for (auto& t : batch) t = t.pin_memory();
  }
  return batch;
}

void InputPipeline::work(size_t lane_index, int64_t first_index) {
  const auto stride = static_cast<int64_t>(lanes_.size());
  for (int64_t index = first_index;;) {
    int64_t pauses = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        return stop_ || (started_ && !paused_ && lanes_[lane_index].ready.size() < capacity_);
      });
      if (stop_) return;
      ++building_;
      pauses = pauses_;
    }
    Batch batch;
    std::exception_ptr error;
    try {
      batch = produce(index);
    } catch (...) {
      error = std::current_exception();
    }
    bool kept = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --building_;
      if (error) {
        lanes_[lane_index].error = error;
      } else if (pauses_ != pauses) {
        // Finished during a pause: built again (the same index, the same
        // batch) in the turn that needs it.
        kept = false;
        ++discarded_;
      } else {
        lanes_[lane_index].ready.push_back(std::move(batch));
      }
    }
    changed_.notify_all();
    if (error) return;
    if (kept) index += stride;
  }
}

namespace {

// CPU time of the calling thread: what the step's thread itself spends on
// input (building batches), as opposed to blocked waiting for a worker.
double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

Batch InputPipeline::next() {
  PhaseTimer phase(Phase::input_wait, settings_.device);
  const auto t0 = Clock::now();
  const double cpu0 = thread_cpu_seconds();
  Batch batch;
  if (lanes_.empty()) {
    // No workers: the step builds its own batch, and all of it is input time.
    batch = produce(next_index_);
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!started_) {
      started_ = true;
      changed_.notify_all();
    }
    Lane& lane = lanes_[static_cast<size_t>(next_index_) % lanes_.size()];
    changed_.wait(lock, [&] { return !lane.ready.empty() || lane.error; });
    if (lane.ready.empty()) std::rethrow_exception(lane.error);
    batch = std::move(lane.ready.front());
    lane.ready.pop_front();
    lock.unlock();
    changed_.notify_all();
  }
  ++next_index_;
  wait_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  wait_cpu_s_ += thread_cpu_seconds() - cpu0;
  return batch;
}

Batch InputPipeline::next_on_device() {
  Batch batch = next();
  PhaseTimer phase(Phase::host_to_device, settings_.device);
  // The copies alone between the timing events: channels_last's layout
  // conversion after them is a kernel on the device, not a transfer.
  batch = transfers_.time([&] {
    for (auto& t : batch) t = settings_.copy_to_device(t);
    return batch;
  });
  for (auto& t : batch) t = settings_.to_layout(t);
  return batch;
}

}  // namespace gpusweep::torchkit
