// Loading fixture plugins (no LibTorch): ABI checks and missing symbols.
#include "worker/loader.hpp"

#include "support/error.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {
std::string fixture(const char* name) {
  return std::string(GPUSWEEP_TEST_PLUGIN_DIR) + "/gpusweep_" + name + ".so";
}
// "ABI 1.0" as the loader writes it.
std::string abi(unsigned major, unsigned minor) {
  return "ABI " + std::to_string(major) + "." + std::to_string(minor);
}
// The v1.0 table: four uint32 fields, then nine function pointers.
constexpr size_t kV1TableSize = 4 * sizeof(uint32_t) + 9 * sizeof(void*);
std::string load_error(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("a good plugin loads and reports its ABI", "[host][loader]") {
  const LoadedPlugin p = load_plugin(fixture("faults"));
  REQUIRE(p.table != nullptr);
  CHECK(p.abi == "1.1");  // built against this SDK
  CHECK(abi_problem(p.table).empty());
  CHECK_THAT(std::string(p.table->manifest()), Contains("\"name\":\"faults\""));
}

TEST_CASE("a plugin of another ABI major is refused naming both versions", "[host][loader]") {
  CHECK_THAT(load_error(fixture("bad_major")),
             Contains("gpusweep_bad_major.so") && Contains(abi(GPUSWEEP_ABI_MAJOR + 1, 0)) &&
                 Contains(abi(GPUSWEEP_ABI_MAJOR, GPUSWEEP_ABI_MINOR)) && Contains("rebuild"));
}

TEST_CASE("a plugin of a newer ABI minor is refused naming both versions", "[host][loader]") {
  CHECK_THAT(load_error(fixture("newer_minor")),
             Contains(abi(GPUSWEEP_ABI_MAJOR, GPUSWEEP_ABI_MINOR + 7)) &&
                 Contains(abi(GPUSWEEP_ABI_MAJOR, GPUSWEEP_ABI_MINOR)) &&
                 Contains("upgrade gpusweep"));
}

TEST_CASE("a plugin built against the frozen ABI 1.0 header loads and runs",
          "[host][loader][abi]") {
  const LoadedPlugin p = load_plugin(fixture("abi_v1_0"));
  REQUIRE(p.table != nullptr);
  CHECK(p.abi == "1.0");
  CHECK(p.table->struct_size == kV1TableSize);
  CHECK(abi_problem(p.table).empty());
  gpusweep_instance* inst = nullptr;
  REQUIRE(p.table->create(R"({"batch_size":3})", &inst) == GPUSWEEP_STATUS_OK);
  gpusweep_step_result r{};
  r.struct_size = sizeof r;
  REQUIRE(p.table->step(inst, &r) == GPUSWEEP_STATUS_OK);
  CHECK(r.samples == 3);
  const char* metrics = nullptr;
  REQUIRE(p.table->evaluate(inst, &metrics) == GPUSWEEP_STATUS_OK);
  CHECK_THAT(std::string(metrics), Contains("\"steps\":1"));
  p.table->destroy(inst);
}

TEST_CASE("a library without the entry symbol is not a plugin", "[host][loader]") {
  CHECK_THAT(load_error(fixture("no_entry")),
             Contains("not a gpusweep plugin") && Contains("gpusweep_plugin_entry"));
}

TEST_CASE("a missing file says why it cannot load", "[host][loader]") {
  CHECK_THAT(load_error("/nonexistent/gpusweep_x.so"),
             Contains("cannot load it") && Contains("No such file"));
}

TEST_CASE("a table with a NULL function or a tiny size is refused", "[host][loader]") {
  gpusweep_plugin t{};
  t.struct_size = sizeof t;
  t.abi_major = GPUSWEEP_ABI_MAJOR;
  CHECK_THAT(abi_problem(&t), Contains("NULL entry"));
  t.struct_size = 16;
  CHECK_THAT(abi_problem(&t), Contains("too small"));
}
