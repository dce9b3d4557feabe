// Manifest validation for `plugins --check`: every problem at once, each with
// a fix, and the smallest config of the smoke run.
#include "plugin_host/manifest_check.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace gpusweep::host;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

const char* kGood = R"({
  "name": "demo", "version": "0.1.0", "description": "d", "unit": "samples",
  "quality": {"metric": "mse", "reference": "baseline_mse", "higher_is_better": false},
  "params": [
    {"name": "device", "type": "string", "default": "auto", "choices": ["auto", "cpu"], "description": "d"},
    {"name": "batch_size", "type": "int", "default": 64, "min": 4, "max": 4096, "description": "d"},
    {"name": "lr", "type": "float", "default": 0.001, "min": 0, "description": "d"},
    {"name": "fast", "type": "bool", "default": false, "description": "d"}
  ]})";

std::vector<CheckItem> problems(const std::vector<CheckItem>& items) {
  std::vector<CheckItem> out;
  for (const auto& i : items) {
    if (i.level == CheckItem::Level::problem) out.push_back(i);
  }
  return out;
}

// All problem texts and fixes, one per line.
std::string text(const std::vector<CheckItem>& items) {
  std::string out;
  for (const auto& i : problems(items)) out += i.what + " | fix: " + i.fix + "\n";
  return out;
}

}  // namespace

TEST_CASE("a good manifest has no problems", "[host][check]") {
  const auto items = check_manifest(Json::parse(kGood), "demo");
  INFO(text(items));
  CHECK(problems(items).empty());
}

TEST_CASE("every manifest problem is reported with a fix, not only the first", "[host][check]") {
  Json m = Json::parse(kGood);
  m.erase("unit");
  m["params"][1]["default"] = 2;       // below min 4
  m["params"][0]["default"] = "gpu";   // not a choice
  m["params"][2]["default"] = "fast";  // wrong type
  m["params"][3]["min"] = 0;           // ignored on a bool: a note only
  m["params"].push_back({{"name", "lr"}, {"type", "float"}, {"default", 1}});
  m["params"].push_back(
      {{"name", "width"}, {"type", "int"}, {"default", 8}, {"min", 16}, {"max", 4}});
  m["params"].push_back({{"name", "mode"}, {"type", "enum"}, {"default", "a"}});
  m["params"].push_back({{"name", "depth"}, {"type", "int"}});
  const auto items = check_manifest(m, "demo");
  const std::string all = text(items);
  INFO(all);
  CHECK(problems(items).size() == 10);
  CHECK_THAT(all, Contains("no throughput unit") && Contains("m.unit = \"samples\""));
  CHECK_THAT(all, Contains("parameter 'batch_size': default 2 is below its minimum 4"));
  CHECK_THAT(all, Contains("parameter 'device': default \"gpu\" is not one of its choices"));
  CHECK_THAT(all, Contains("parameter 'lr': default \"fast\" is not a float"));
  CHECK_THAT(all, Contains("parameter 'lr' is declared twice"));
  CHECK_THAT(all, Contains("parameter 'width': min 16 is above max 4"));
  CHECK_THAT(all, Contains("parameter 'width': default 8 is below its minimum 16") &&
                      Contains("default 8 is above its maximum 4"));
  CHECK_THAT(all, Contains("parameter 'mode' has type 'enum'"));
  CHECK_THAT(all, Contains("parameter 'depth' has no default"));
  for (const auto& p : problems(items)) CHECK_FALSE(p.fix.empty());
}

TEST_CASE("name, version and quality problems", "[host][check]") {
  Json m = Json::parse(kGood);
  CHECK_THAT(text(check_manifest(m, "other")),
             Contains("names the workload 'demo' but the file is gpusweep_other.so"));
  m["name"] = "My-Model";
  CHECK_THAT(text(check_manifest(m, "")), Contains("is not lower-case letters"));
  m = Json::parse(kGood);
  m.erase("version");
  m["quality"]["higher_is_better"] = "yes";
  m["params"][1]["max"] = "big";
  const std::string all = text(check_manifest(m, "demo"));
  CHECK_THAT(all, Contains("no version") && Contains("higher_is_better") &&
                      Contains("'max' is \"big\", not a number"));
  CHECK_THAT(text(check_manifest(Json::array(), "demo")), Contains("not a JSON object"));
  CHECK_THAT(text(check_manifest(Json{{"error", "manifest() threw"}}, "demo")),
             Contains("manifest() failed"));
}

TEST_CASE("the smoke run uses the defaults with batch_size at its minimum", "[host][check]") {
  const Json c = smallest_config(Json::parse(kGood));
  CHECK(c["batch_size"] == 4);
  CHECK(c["device"] == "auto");
  CHECK(c["lr"] == 0.001);
  Json m = Json::parse(kGood);
  m["params"][1].erase("min");
  CHECK(smallest_config(m)["batch_size"] == 1);
  CHECK(smallest_config(Json::object()).empty());
}
