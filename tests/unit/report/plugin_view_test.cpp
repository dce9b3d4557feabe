// `gpusweep plugins NAME`'s text.
#include "report/plugin_view.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("a plugin's text lists its knobs apart from the common settings", "[report]") {
  const PluginManifest m = PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "toy", "version": "2.0.0", "unit": "images", "description": "A toy.",
    "params": [
      {"name": "depth", "type": "int", "default": 4, "min": 1, "max": 32},
      {"name": "precision", "type": "string", "default": "fp32", "choices": ["fp32", "bf16"],
       "common": true},
      {"name": "pin_memory", "type": "bool", "default": false, "common": true, "applies": false}
    ]})"));
  const std::string text = plugin_text(m, "/p/gpusweep_toy.so", "1.0", nlohmann::json::object());
  CHECK_THAT(text, Contains("toy 2.0.0: A toy."));
  CHECK_THAT(text, Contains("/p/gpusweep_toy.so (ABI 1.0)"));
  CHECK_THAT(text, Contains("throughput: images/s"));
  const auto knobs = text.find("workload knobs:");
  const auto common = text.find("common settings:");
  REQUIRE(knobs != std::string::npos);
  REQUIRE(common != std::string::npos);
  CHECK(knobs < text.find("1 .. 32"));
  CHECK(common < text.find("fp32, bf16"));
  CHECK_THAT(text, Contains("does not apply here"));
}
