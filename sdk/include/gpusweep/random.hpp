// Random draws whose results the project defines, the same with every
// standard library. std::shuffle and the <random> distributions
// (uniform_int_distribution, normal_distribution, gamma_distribution, ...)
// are implementation-defined: libstdc++, libc++ and MSVC give different
// values from the same engine state, so a plan order, a shard's slice or a
// workload's generated data would depend on how the binary was built. The
// engines are not the problem: std::mt19937_64 is specified to the bit, and
// so is SplitMix64 below. Every draw here is plain integer arithmetic, apart
// from normal() and gamma(), which also call std::log, std::sqrt, std::cos
// and std::pow (correctly rounded in glibc for sqrt; log, cos and pow may
// differ in the last bit between C libraries, never in the algorithm).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace gpusweep::random {

// splitmix64 (Steele, Lea and Flood): a 64-bit engine with one word of state,
// usable wherever a UniformRandomBitGenerator is.
struct SplitMix64 {
  using result_type = uint64_t;
  uint64_t state = 0;

  explicit SplitMix64(uint64_t seed) : state(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<uint64_t>::max(); }
  result_type operator()() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
};

// 64 uniform bits from an engine that gives them in one call (std::mt19937_64,
// SplitMix64); anything narrower is refused at compile time, not stretched.
template <class Engine>
uint64_t bits64(Engine& engine) {
  static_assert(Engine::min() == 0 && Engine::max() == std::numeric_limits<uint64_t>::max(),
                "gpusweep::random needs an engine of 64 uniform bits (std::mt19937_64, "
                "SplitMix64)");
  return static_cast<uint64_t>(engine());
}

// Uniform in [0, n) without modulo bias (rejection); n > 0.
template <class Engine>
uint64_t uniform_below(Engine& engine, uint64_t n) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % n;  // a multiple of n
  uint64_t v;
  do {
    v = bits64(engine);
  } while (v >= limit);
  return v % n;
}

// Uniform over the integers lo..hi, both included; lo <= hi.
template <class Engine>
int64_t uniform_int(Engine& engine, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == std::numeric_limits<uint64_t>::max()) return static_cast<int64_t>(bits64(engine));
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + uniform_below(engine, span + 1));
}

// Uniform in [0, 1): the top 53 bits as a double's mantissa.
template <class Engine>
double unit(Engine& engine) {
  return static_cast<double>(bits64(engine) >> 11) * 0x1.0p-53;
}

// Uniform in [lo, hi).
template <class Engine>
double uniform_real(Engine& engine, double lo, double hi) {
  return lo + (hi - lo) * unit(engine);
}

// Normal(mean, sd) by Box-Muller, one value per call (two uniform draws).
template <class Engine>
double normal(Engine& engine, double mean, double sd) {
  const double u1 = 1.0 - unit(engine);  // (0, 1]: log is finite
  const double u2 = unit(engine);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape > 0. Below 1 the
// usual boost: Gamma(shape + 1) * U^(1 / shape).
template <class Engine>
double gamma(Engine& engine, double shape) {
  if (shape < 1.0) {
    const double u = 1.0 - unit(engine);
    return gamma(engine, shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal(engine, 0.0, 1.0);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = 1.0 - unit(engine);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// Fisher-Yates over v.
template <class T, class Engine>
void shuffle(std::vector<T>& v, Engine& engine) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<size_t>(uniform_below(engine, i))]);
  }
}

}  // namespace gpusweep::random
