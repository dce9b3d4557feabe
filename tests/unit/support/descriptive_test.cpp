// Block-sample statistics and content hashes.
#include "support/descriptive.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace gpusweep::host;

TEST_CASE("describe computes median, quartiles and CV like numpy", "[host][stats]") {
  const Distribution d = describe({4, 1, 3, 2, 5});
  CHECK(d.median == 3);
  CHECK(d.min == 1);
  CHECK(d.max == 5);
  CHECK(d.q1 == 2);
  CHECK(d.q3 == 4);
  CHECK(d.iqr == 2);
  CHECK(d.mean == 3);
  CHECK(d.stddev == Approx(1.5811388));  // sample stddev, n-1
  CHECK(d.cv == Approx(1.5811388 / 3));
  CHECK(quantile({1, 2, 3, 4}, 0.5) == 2.5);
  CHECK(quantile({10, 20}, 0.25) == 12.5);
  CHECK(describe({7}).cv == 0);
  CHECK_THROWS(describe({}));
}

TEST_CASE("quantile by selection equals interpolating the sorted values", "[host][stats]") {
  std::mt19937 rng(7);
  std::lognormal_distribution<double> d(0, 1);
  for (int n : {1, 2, 3, 10, 101, 1000}) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(rng);
    v.push_back(v.front());  // a tie
    auto sorted = v;
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0}) {
      const double pos = q * static_cast<double>(sorted.size() - 1);
      const auto lo = static_cast<size_t>(std::floor(pos));
      const auto hi = std::min(lo + 1, sorted.size() - 1);
      const double expected =
          sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
      CHECK(quantile(v, q) == expected);
    }
  }
}
