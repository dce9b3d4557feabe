// Config hashes.
#include "spec/hashing.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;

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
