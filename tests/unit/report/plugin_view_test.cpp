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

TEST_CASE("a plugin's text lists the metrics a target may name, with their ranges", "[report]") {
  const PluginManifest m = PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "clf", "version": "1.0.0", "unit": "images",
    "quality": {"metric": "accuracy", "higher_is_better": true},
    "metrics": [{"name": "accuracy", "min": 0, "max": 1},
                {"name": "val_loss", "higher_is_better": false, "min": 0}],
    "params": []})"));
  const std::string text = plugin_text(m, "/p/clf.so", "1.1", nlohmann::json::object());
  CHECK_THAT(text, Contains("targets:    accuracy (max, 0 to 1), val_loss (min, 0 to inf)"));
  // Without declared metrics: the quality metric alone, unbounded.
  const PluginManifest plain = PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "p", "version": "1.0.0", "unit": "steps",
    "quality": {"metric": "mse", "higher_is_better": false}, "params": []})"));
  CHECK_THAT(plugin_text(plain, "/p/p.so", "1.1", nlohmann::json::object()),
             Contains("targets:    mse (min) (measure.target)"));
}
