// The input pipeline; see input_pipeline.hpp.
#include <gpusweep/torchkit/input_pipeline.hpp>

#include <gpusweep/torchkit/diagnostics.hpp>

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
      capacity_(static_cast<size_t>(std::max<int64_t>(1, settings.prefetch))) {
  const auto workers = static_cast<size_t>(std::max<int64_t>(0, settings.loader_workers));
  for (size_t w = 0; w < workers; ++w) lanes_.push_back(std::make_unique<Lane>());
  for (size_t w = 0; w < workers; ++w) {
    threads_.emplace_back([this, w] { work(w, static_cast<int64_t>(w)); });
  }
}

InputPipeline::~InputPipeline() {
  for (auto& lane : lanes_) {
    std::lock_guard<std::mutex> lock(lane->mutex);
    stop_ = true;
  }
  for (auto& lane : lanes_) lane->changed.notify_all();
  for (auto& t : threads_) t.join();
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
  Lane& lane = *lanes_[lane_index];
  const auto stride = static_cast<int64_t>(lanes_.size());
  for (int64_t index = first_index;; index += stride) {
    {
      std::unique_lock<std::mutex> lock(lane.mutex);
      lane.changed.wait(lock, [&] { return stop_ || lane.ready.size() < capacity_; });
      if (stop_) return;
    }
    Batch batch;
    try {
      batch = produce(index);
    } catch (...) {
      std::lock_guard<std::mutex> lock(lane.mutex);
      lane.error = std::current_exception();
      lane.changed.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(lane.mutex);
    lane.ready.push_back(std::move(batch));
    lane.changed.notify_all();
  }
}

Batch InputPipeline::next() {
  PhaseTimer phase(Phase::input_wait, settings_.device);
  const auto t0 = Clock::now();
  Batch batch;
  if (lanes_.empty()) {
    // No workers: the step builds its own batch, and all of it is input time.
    batch = produce(next_index_);
  } else {
    Lane& lane = *lanes_[static_cast<size_t>(next_index_) % lanes_.size()];
    std::unique_lock<std::mutex> lock(lane.mutex);
    lane.changed.wait(lock, [&] { return !lane.ready.empty() || lane.error; });
    if (lane.ready.empty()) std::rethrow_exception(lane.error);
    batch = std::move(lane.ready.front());
    lane.ready.pop_front();
    lane.changed.notify_all();
  }
  ++next_index_;
  wait_s_ += std::chrono::duration<double>(Clock::now() - t0).count();
  return batch;
}

Batch InputPipeline::next_on_device() {
  Batch batch = next();
  PhaseTimer phase(Phase::host_to_device, settings_.device);
  for (auto& t : batch) t = settings_.to_device(t);
  return batch;
}

}  // namespace gpusweep::torchkit
