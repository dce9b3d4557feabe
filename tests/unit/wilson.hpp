// A share k of n with its 95% Wilson interval: the one C++ copy, for the
// tests that report how often a simulated procedure erred and for bench/'s
// simulators (bench/wilson.py is the scripts' copy).
#pragma once

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

namespace gpusweep::test {

struct Wilson {
  double share = 0, low = 0, high = 1;  // fractions; (0, 0, 1) when n is 0
};

inline Wilson wilson(long k, long n) {
  if (n <= 0) return {};
  const double z = 1.959964, nn = static_cast<double>(n), p = static_cast<double>(k) / nn;
  const double mid = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn);
  return {p, std::max(0.0, mid - half), std::min(1.0, mid + half)};
}

// "k of n (p%, 95% Wilson interval [lo%, hi%])".
inline std::string rate(long k, long n) {
  const Wilson w = wilson(k, n);
  std::ostringstream o;
  o << k << " of " << n << " (" << 100 * w.share << "%, 95% Wilson interval [" << 100 * w.low
    << "%, " << 100 * w.high << "%])";
  return o.str();
}

}  // namespace gpusweep::test
