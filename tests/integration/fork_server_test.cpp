// Trials forked from a pre-loaded fork server (the default) against fresh
// worker processes (--fresh-workers): each trial still has its own process,
// faults stay in their trial, and a plugin that is unsafe to fork is run
// fresh, with a note.
#include "harness.hpp"

using Catch::Matchers::Contains;
using gpusweep::test::count_in;
using gpusweep::test::Sandbox;

namespace {

const char* kForkSweep = R"({"name": "forks", "workload": "faults",
  "grid": {"mode": ["ok", "segfault", "throw_step"], "seed": [0, 1]},
  "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "timeout_s": 20}})";

}  // namespace

TEST_CASE("forked trials each run in their own process and a crash ends only its trial",
          "[integration][fork]") {
  Sandbox box;
  box.write("f.json", kForkSweep);
  for (const bool fresh : {false, true}) {
    INFO((fresh ? "--fresh-workers" : "fork server"));
    const std::string db = fresh ? "fresh.db" : "forked.db";
    const auto r =
        box.gpusweep("run f.json --jobs 2 --db " + db + (fresh ? " --fresh-workers" : ""));
    INFO(r.output);
    REQUIRE(r.code == 0);
    auto count = [&](const std::string& where) {
      return count_in(box.path(db), "SELECT count(*) FROM trials WHERE " + where);
    };
    CHECK(count("status = 'ok' AND json_extract(config_json, '$.mode') = 'ok'") == 2);
    CHECK(count("status = 'crashed' AND error LIKE '%SIGSEGV%'") == 2);
    CHECK(count("status = 'failed' AND error LIKE '%thrown in step%'") == 2);
    // Two ok trials, two processes, both forked by the server (or neither).
    CHECK(count_in(box.path(db), "SELECT count(DISTINCT value) FROM metrics WHERE name = 'pid'") ==
          2);
    CHECK(count_in(box.path(db), "SELECT count(*) FROM metrics WHERE name = 'forked' AND value = " +
                                     std::string(fresh ? "0" : "1")) == 2);
    CHECK_THAT(r.output, !Contains("note:"));
  }
}

TEST_CASE(
    "a plugin that starts threads as it loads is not forked: its trials run fresh, "
    "with a note",
    "[integration][fork]") {
  Sandbox box;
  box.write("t.json", R"({"name": "threads", "workload": "threaded_load",
    "grid": {"seed": [0, 1, 2]}, "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 5}})");
  const auto r = box.gpusweep("run t.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 3);
  // Said once, with the reason.
  CHECK_THAT(r.output, Contains("note: fork server: loading the plugin left 2 threads"));
  CHECK(r.output.find("note:") == r.output.rfind("note:"));
}

TEST_CASE(
    "a plugin that initialises CUDA as it loads is not forked: its trials run fresh, with a "
    "note",
    "[integration][fork]") {
  const char* sweep = R"({"name": "cuda", "workload": "cuda_at_load",
    "grid": {"seed": [0, 1]}, "measure": {"min_block_s": 0, "repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 5}})";
  // With the (fake) driver initialised by the plugin's static initialiser.
  Sandbox box;
  box.write("c.json", sweep);
  auto r = gpusweep::test::run_shell("cd '" + box.path("") + "' && GPUSWEEP_TEST_FAKE_CUDA='" +
                                     GPUSWEEP_FAKE_CUDA + "' GPUSWEEP_PLUGIN_PATH='" +
                                     GPUSWEEP_TEST_PLUGIN_DIR + "' '" + GPUSWEEP_BIN +
                                     "' run c.json --db results.db 2>&1");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK_THAT(r.output, Contains("note: fork server: loading the plugin initialised CUDA"));
  // The same plugin initialising nothing is forked, without a note.
  Sandbox plain;
  plain.write("c.json", sweep);
  r = plain.gpusweep("run c.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(plain.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK_THAT(r.output, !Contains("note:"));
}
