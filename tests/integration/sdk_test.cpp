// The plugin author's tools through the real binary: `plugins --check` on
// fixture plugins that are broken in one way each, `new-plugin`, and a plugin
// built against the frozen ABI v1.0 header running in this host.
#include "harness.hpp"

#include <gpusweep/plugin.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;

namespace {

std::string fixture(const char* name) {
  return std::string(GPUSWEEP_TEST_PLUGIN_DIR) + "/gpusweep_" + name + ".so";
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string kHostAbi =
    "ABI " + std::to_string(GPUSWEEP_ABI_MAJOR) + "." + std::to_string(GPUSWEEP_ABI_MINOR);

}  // namespace

TEST_CASE("plugins --check passes working plugins", "[integration][check]") {
  Sandbox box;
  for (const char* name : {"faults", "abi_v1_0"}) {
    const auto r = box.gpusweep("plugins --check " + fixture(name));
    INFO(r.output);
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Contains("no problems found") && Contains("create()") &&
                             Contains("step() x5") && Contains("destroy() returned"));
  }
  // By name, from the plugin path.
  const auto r = box.gpusweep("plugins --check noop --steps 3");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("step() x3: 1 steps each") && Contains("(batch_size=1)"));
}

TEST_CASE("plugins --check finds a default outside its range or choices", "[integration][check]") {
  Sandbox box;
  const auto r = box.gpusweep("plugins --check " + fixture("check_bad_default"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output,
             Contains("PROBLEM  parameter 'hidden': default 0 is below its minimum 1") &&
                 Contains("fix: make the default lie in 1..64") &&
                 Contains("parameter 'mode': default \"fast\" is not one of its choices") &&
                 // The SDK checks the smoke run's config against the same
                 // manifest before the workload sees it.
                 Contains("create() with the smallest config returned failed: 'hidden': 0 is "
                          "below the minimum 1") &&
                 Contains("3 problems found"));
}

TEST_CASE("plugins --check finds a missing throughput unit", "[integration][check]") {
  Sandbox box;
  const auto r = box.gpusweep("plugins --check " + fixture("check_no_unit"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("the manifest has no throughput unit") &&
                           Contains("fix: set m.unit") && Contains("1 problem found"));
  // The smoke run still ran: every problem at once.
  CHECK_THAT(r.output, Contains("step() x5: 1 samples each"));
}

TEST_CASE("plugins --check finds a step() that reports zero samples", "[integration][check]") {
  Sandbox box;
  const auto r = box.gpusweep("plugins --check " + fixture("check_zero_samples"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("step() reported 0 samples in each of its 5 steps") &&
                           Contains("throughput is samples per second") &&
                           Contains("evaluate() did not return 'accuracy'") &&
                           Contains("2 problems found"));
}

TEST_CASE("plugins --check survives a plugin that crashes and names the call",
          "[integration][check]") {
  Sandbox box;
  const auto r = box.gpusweep("plugins --check " + fixture("check_crashes"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("step() (step 3) crashed the worker: SIGSEGV") &&
                           Contains("gpusweep-worker --check --plugin") &&
                           Contains("1 problem found"));
}

TEST_CASE("plugins --check refuses other ABIs naming both versions", "[integration][check]") {
  Sandbox box;
  auto r = box.gpusweep("plugins --check " + fixture("bad_major"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("does not load") &&
                           Contains("ABI " + std::to_string(GPUSWEEP_ABI_MAJOR + 1) + ".0") &&
                           Contains(kHostAbi));
  r = box.gpusweep("plugins --check " + fixture("newer_minor"));
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("ABI " + std::to_string(GPUSWEEP_ABI_MAJOR) + "." +
                                std::to_string(GPUSWEEP_ABI_MINOR + 7)) &&
                           Contains(kHostAbi) && Contains("upgrade gpusweep"));
  r = box.gpusweep("plugins --check " + fixture("no_entry"));
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("not a gpusweep plugin") && Contains("GPUSWEEP_EXPORT_WORKLOAD"));
  r = box.gpusweep("plugins --check /nonexistent/gpusweep_x.so");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("no plugin file at '/nonexistent/gpusweep_x.so'"));
}

TEST_CASE("a plugin built against the frozen ABI 1.0 header runs in this host",
          "[integration][abi]") {
  Sandbox box;
  box.write("s.json", R"({"name": "abi10", "workload": "abi_v1_0",
    "grid": {"batch_size": [1, 3]},
    "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 1, "steps_per_block": 10, "blocks": 5}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE samples_per_step = 3") == 1);
  CHECK_THAT(box.gpusweep("plugins abi_v1_0").output, Contains("(ABI 1.0)"));
}

TEST_CASE("new-plugin writes a project from the embedded templates", "[integration][new_plugin]") {
  Sandbox box;
  auto r = box.gpusweep("new-plugin my_model");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("cmake -S my_model -B my_model/build") &&
                           Contains("plugins --check my_model/build/gpusweep_my_model.so"));
  const std::string cmake = read(box.path("my_model/CMakeLists.txt"));
  CHECK_THAT(cmake, Contains("project(my_model LANGUAGES CXX)") &&
                        Contains("find_package(gpusweep CONFIG REQUIRED)") &&
                        Contains("gpusweep_add_plugin(my_model TORCH SOURCES my_model.cpp)"));
  const std::string source = read(box.path("my_model/my_model.cpp"));
  CHECK_THAT(source, Contains("class MyModel final : public torchkit::TorchWorkload") &&
                         Contains("m.name = \"my_model\"") &&
                         Contains("GPUSWEEP_EXPORT_WORKLOAD(MyModel)") &&
                         Contains("torchkit::common_params"));
  CHECK_THAT(read(box.path("my_model/sweep.json")), Contains("\"workload\": \"my_model\""));
  CHECK_THAT(read(box.path("my_model/README.md")), Contains("# my_model"));
  for (const char* f : {"CMakeLists.txt", "my_model.cpp", "sweep.json", "README.md"}) {
    const std::string text = read(box.path(std::string("my_model/") + f));
    INFO(f);
    for (const char* key : {"{{name}}", "{{class}}", "{{gpusweep_version}}", "{{abi}}"}) {
      CHECK(text.find(key) == std::string::npos);
    }
  }

  // --dir; an empty folder is fine, a non-empty one is refused.
  std::filesystem::create_directory(box.path("empty"));
  CHECK(box.gpusweep("new-plugin other --dir empty").code == 0);
  CHECK(std::filesystem::exists(box.path("empty/other.cpp")));
  r = box.gpusweep("new-plugin again --dir my_model");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("'my_model' already exists and is not empty"));
}

TEST_CASE("new-plugin refuses bad names with a suggestion", "[integration][new_plugin]") {
  Sandbox box;
  auto r = box.gpusweep("new-plugin My-Model");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("invalid plugin name 'My-Model'") && Contains("'my_model'"));
  r = box.gpusweep("new-plugin 2fast");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("starting with a letter"));
  r = box.gpusweep("new-plugin noop");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("a plugin named 'noop' already exists"));
  r = box.gpusweep("new-plugin manifest");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("which the SDK already defines"));
  CHECK(box.gpusweep("new-plugin").code == 2);
  CHECK_FALSE(std::filesystem::exists(box.path("My-Model")));
}

TEST_CASE("plugins --check --format json: each item with its level, what and fix, and the tally",
          "[integration][check]") {
  Sandbox box;
  const auto r = box.gpusweep("plugins --check " + fixture("check_bad_default") + " --format json");
  INFO(r.output);
  CHECK(r.code == 1);
  const nlohmann::json report = nlohmann::json::parse(r.output);
  CHECK(report["path"] == fixture("check_bad_default"));
  CHECK(report["problems"] == 3);
  int problems = 0;
  bool hidden_named = false;
  for (const auto& item : report["items"]) {
    if (item["level"] != "problem") continue;
    ++problems;
    CHECK(item["fix"].is_string());
    hidden_named = hidden_named || item["what"] ==
                                       "parameter 'hidden': default 0 is below its "
                                       "minimum 1";
  }
  CHECK(problems == 3);
  CHECK(hidden_named);
  CHECK(report["config"]["hidden"] == 0);

  const auto list = box.gpusweep("plugins " + fixture("check_bad_default") + " --format csv");
  CHECK(list.code == 2);
  CHECK_THAT(list.output, Contains("NAME and --check print table or json"));
}
