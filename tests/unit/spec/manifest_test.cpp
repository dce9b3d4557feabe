// Manifest parsing, value checks and did-you-mean.
#include "spec/manifest.hpp"

#include "support/error.hpp"
#include "test_manifest.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("manifest parses params with types, defaults and ranges", "[host][manifest]") {
  const auto m = test::dqn_like_manifest();
  CHECK(m.name == "dqn");
  CHECK(m.secondary_unit == "env_steps");
  CHECK(m.quality_metric == "mean_return");
  REQUIRE(m.find("batch_size") != nullptr);
  CHECK(m.find("batch_size")->common);
  CHECK_FALSE(m.find("lr")->common);
  CHECK(*m.find("batch_size")->max == 4096);
  CHECK(m.find("nope") == nullptr);
  CHECK(m.defaults()["target_sync"] == "roundtrip");
}

TEST_CASE("malformed manifests are refused with the reason", "[host][manifest]") {
  auto error = [](const char* text) -> std::string {
    try {
      PluginManifest::parse(Json::parse(text));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error(R"([])"), Contains("not a JSON object"));
  CHECK_THAT(error(R"({"version": "1", "unit": "x", "params": []})"), Contains("'name'"));
  CHECK_THAT(error(R"({"name": "a", "version": "1", "unit": "x"})"), Contains("params"));
  CHECK_THAT(error(R"({"name": "a", "version": "1", "unit": "x",
                       "params": [{"name": "p", "type": "complex", "default": 1}]})"),
             Contains("unknown type 'complex'"));
  CHECK_THAT(error(R"({"name": "a", "version": "1", "unit": "x",
                       "params": [{"name": "p", "type": "int", "default": 50, "max": 10}]})"),
             Contains("default of 'p' is invalid") && Contains("above the maximum 10"));
  CHECK_THAT(error(R"({"name": "a", "version": "1", "unit": "x",
                       "params": [{"name": "p", "type": "int", "default": 1},
                                  {"name": "p", "type": "int", "default": 1}]})"),
             Contains("declared twice"));
}

TEST_CASE("Param::check enforces type, choices and range", "[host][manifest]") {
  ParamSpec p;
  p.name = "x";
  p.type = ParamType::real;
  p.min = 0;
  CHECK_FALSE(p.check(1));  // an integer is a fine float
  CHECK_FALSE(p.check(0.5));
  CHECK(p.check(-1));
  CHECK(p.check("1"));
  p.type = ParamType::integer;
  CHECK(p.check(1.5));
  CHECK(p.check(true));
  p.type = ParamType::string;
  p.choices = {"a", "b"};
  CHECK_FALSE(p.check("a"));
  CHECK(p.check("c"));
}

TEST_CASE("did_you_mean suggests close names only", "[host][manifest]") {
  const std::vector<std::string> names = {"batch_size", "precision", "threads"};
  CHECK(did_you_mean("batchsize", names) == std::optional<std::string>("batch_size"));
  CHECK(did_you_mean("precison", names) == std::optional<std::string>("precision"));
  CHECK_FALSE(did_you_mean("learning_rate", names));
  CHECK(parse_cli_value("12") == 12);
  CHECK(parse_cli_value("true") == true);
  CHECK(parse_cli_value("cpu") == "cpu");
  CHECK(parse_cli_value("0.5") == 0.5);
}
