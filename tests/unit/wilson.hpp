// A rate with its 95% Wilson interval, for the tests that report how often
// a simulated procedure erred.
#pragma once

#include <cmath>
#include <sstream>
#include <string>

namespace gpusweep::test {

// "k of n (p%, 95% Wilson interval [lo%, hi%])".
inline std::string rate(int k, int n) {
  const double z = 1.959964, p = static_cast<double>(k) / n, nn = n;
  const double mid = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / (1 + z * z / nn);
  std::ostringstream o;
  o << k << " of " << n << " (" << 100 * p << "%, 95% Wilson interval [" << 100 * (mid - half)
    << "%, " << 100 * (mid + half) << "%])";
  return o.str();
}

}  // namespace gpusweep::test
