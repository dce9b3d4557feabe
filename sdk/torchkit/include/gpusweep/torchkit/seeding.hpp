// Independent, reproducible random streams from a trial's seed: every
// consumer of randomness in a workload (data generation, env resets,
// exploration, sampling, shuffling, evaluation) gets its own stream, so that
// evaluating or changing one knob never shifts another consumer's draws.
#pragma once

#include <torch/torch.h>
#include <gpusweep/random.hpp>

#include <cstdint>
#include <mutex>

namespace gpusweep::torchkit {

// splitmix64 (gpusweep/random.hpp): turns (seed, stream) into well-separated
// seeds, so that seed 0 and seed 1 do not yield overlapping streams: the
// first draw of SplitMix64 started `stream` steps along from `seed`. Plain
// arithmetic: usable from loader threads and for std::mt19937_64 as well as
// torch generators.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  return random::SplitMix64(seed + 0x9E3779B97F4A7C15ULL * stream)();
}

// A generator of the device's own kind, private to the caller and seeded
// with seed. Cloning the default generator keeps this free of CUDA headers.
inline torch::Generator make_generator(const torch::Device& device, uint64_t seed) {
  const at::Generator& base = at::globalContext().defaultGenerator(device);
  at::Generator gen;
  {
    std::lock_guard<std::mutex> lock(const_cast<at::Generator&>(base).mutex());
    gen = base.clone();
  }
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
  return gen;
}

}  // namespace gpusweep::torchkit
