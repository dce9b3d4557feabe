// A shuffle whose result the project defines: splitmix64 draws and
// Fisher-Yates with rejection sampling, the same on every standard library
// (std::shuffle and the <random> distributions are implementation-defined).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace gpusweep::host {

// The next value of splitmix64 (Steele, Lea and Flood), advancing state.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Uniform in [0, n) without modulo bias; n > 0.
inline uint64_t uniform_below(uint64_t n, uint64_t& state) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // a multiple of n
  uint64_t v;
  do {
    v = splitmix64(state);
  } while (v >= limit);
  return v % n;
}

// Fisher-Yates over v, drawing from state.
template <class T>
void shuffle(std::vector<T>& v, uint64_t& state) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<size_t>(uniform_below(i, state))]);
  }
}

}  // namespace gpusweep::host
