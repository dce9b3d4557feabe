// An input pipeline: batches produced by loader_workers background threads
// into bounded queues of `prefetch` batches each, delivered in order. Batch i
// is always built from the same seed, so the data does not depend on the
// number of workers. The time the training step spends waiting for input
// (blocked on the queue, or producing the batch itself with 0 workers) is
// measured: that is the input-wait share the host reports. The loaders start
// at the first next(), not at construction: a backlog built while the
// workload sets up (or renders its validation set) would serve the first
// steps at no wait, which steady-state training never sees.
#pragma once

#include <gpusweep/torchkit/diagnostics.hpp>
#include <gpusweep/torchkit/settings.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace gpusweep::torchkit {

// A host batch: named tensors (for example {"input", "target"}).
using Batch = std::vector<torch::Tensor>;

class InputPipeline {
 public:
  // Builds batch number `index` with a generator seeded for that index. Runs
  // on a worker thread: it must only touch its arguments and immutable data.
  using Producer = std::function<Batch(int64_t index, std::mt19937_64& rng)>;

  InputPipeline(const Settings& settings, Producer producer);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // The next batch, on the host (pinned when pin_memory). Rethrows a
  // producer's exception.
  Batch next();

  // The next batch moved to the device (Settings::to_device on each tensor).
  Batch next_on_device();

  double wait_seconds() const { return wait_s_; }
  // The step thread's own CPU time within wait_seconds(): building batches
  // with 0 workers, next to nothing when workers build them (it blocks).
  // Unlike the wall time, it barely moves with the machine's load.
  double wait_cpu_seconds() const { return wait_cpu_s_; }
  // Batches finished during a pause and so built again (see pause()).
  int64_t discarded_batches() {
    std::lock_guard<std::mutex> lock(mutex_);
    return discarded_;
  }
  int64_t batches() const { return next_index_; }
  // next_on_device's copies (without channels_last's layout conversion),
  // timed on a CUDA device (events, no sync).
  TransferTimes& transfers() { return transfers_; }

  // Stops the loader threads and returns once none is building a batch;
  // resume() lets them go on. Interleaved execution pauses a trial between
  // its turns, so that its loaders neither take the CPU from another
  // trial's block nor fill the queues while it waits (which would serve its
  // next block from a backlog). A batch still being built when pause() is
  // called is finished off the clock, so it is thrown away and built again
  // after resume(): its time lands in the next block, as it would without
  // turns, instead of arriving free (which favoured input-bound configs
  // with more loader_workers).
  void pause();
  void resume();

 private:
  // One mutex guards every lane, the stop and pause flags and the count of
  // batches being built: loader threads take it once per batch.
  struct Lane {
    std::deque<Batch> ready;
    std::exception_ptr error;
  };
  void work(size_t lane, int64_t first_index);
  Batch produce(int64_t index);

  const Settings& settings_;
  Producer producer_;
  uint64_t seed_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Lane> lanes_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  bool paused_ = false;
  bool started_ = false;   // set by the first next(): no batch is built before
  int building_ = 0;       // loader threads building a batch now
  int64_t pauses_ = 0;     // pause() calls so far: a build that saw one begin is thrown away
  int64_t discarded_ = 0;  // batches thrown away so (a stat)
  int64_t next_index_ = 0;
  double wait_s_ = 0;
  double wait_cpu_s_ = 0;
  TransferTimes transfers_;
};

}  // namespace gpusweep::torchkit
