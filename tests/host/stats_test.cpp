// Block-sample statistics and content hashes.
#include "hashing.hpp"
#include "stats.hpp"

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

TEST_CASE("config hashes are canonical and distinguish what matters", "[host][hash]") {
  const nlohmann::json a = nlohmann::json::parse(R"({"x": 1, "y": "z"})");
  const nlohmann::json b = nlohmann::json::parse(R"({"y": "z",   "x": 1})");
  CHECK(config_hash("dqn", "1.0.0", a) == config_hash("dqn", "1.0.0", b));
  CHECK(config_hash("dqn", "1.0.0", a) != config_hash("dqn", "1.0.1", a));
  CHECK(config_hash("dqn", "1.0.0", a) != config_hash("noop", "1.0.0", a));
  CHECK(config_hash("dqn", "1.0.0", a) != config_hash("dqn", "1.0.0", {{"x", 2}, {"y", "z"}}));
  CHECK(hash_text("") == "cbf29ce484222325");  // FNV-1a 64 offset basis
  CHECK(hash_text("a") == "af63dc4c8601ec8c");
  CHECK(hash_text("a").size() == 16);
}
