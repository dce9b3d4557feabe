// Block-sample statistics and content hashes.
#include "support/stats.hpp"

#include <catch2/catch.hpp>

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
