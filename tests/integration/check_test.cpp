// gpusweep check through the real binary: two builds of the spin_build
// fixture (tests/fixtures/plugins/spin_build.cpp), one 5% slower a step,
// judged in one interleaved run; an identical build from another folder
// passes; every refusal named before anything runs. The measured ones run
// alone ([timing]): a spinning step beside another test's processes on two
// cores varied by 30-40% a block, and the checks ran out of budget.
#include "harness.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <tuple>

using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;

namespace {

const std::string kBase = GPUSWEEP_FIXTURE_BUILD_BASE;
const std::string kSame = GPUSWEEP_FIXTURE_BUILD_SAME;
const std::string kSlow5 = GPUSWEEP_FIXTURE_BUILD_SLOW5;
const std::string kSlow50 = GPUSWEEP_FIXTURE_BUILD_SLOW50;
const std::string kExtra = GPUSWEEP_FIXTURE_BUILD_EXTRA;

// Two configs, blocks of about 0.1 s (shorter ones are at the mercy of the
// scheduler on a loaded machine): a round of the four trials is 2-3 s.
const char* kSweep = R"({"name": "spin_check", "workload": "spin_build",
  "grid": {"spin_us": [300, 600]},
  "measure": {"warmup_steps": 5, "block_s": 0.1, "blocks": 5, "repeats": 3}})";

}  // namespace

TEST_CASE("check calls a build 5% slower a step a regression and exits 1",
          "[integration][timing]") {
  Sandbox box;
  box.write("s.json", kSweep);
  const auto r = box.gpusweep("check s.json --db results.db --base " + kBase + " --head " + kSlow5 +
                              " --budget-s 120 --head-label slower --output verdict.xml "
                              "--format junit");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("check 'spin_check' (run 1): regression"));
  CHECK_THAT(r.output, Contains("head slower: "));
  // Both configs, each with its own verdict and the build's slowdown.
  CHECK_THAT(r.output, Contains("spin_us=300"));
  CHECK_THAT(r.output, Contains("spin_us=600"));
  CHECK_THAT(r.output, Contains("exit 1: regression"));
  // Each trial ran, and records, the build its config names.
  CHECK(box.count("SELECT count(DISTINCT plugin_hash) FROM trials") == 2);
  CHECK(box.count("SELECT count(*) FROM trials WHERE plugin_path LIKE '%/slow5/%' AND "
                  "json_extract(config_json, '$.build') != 'head'") == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE plugin_path LIKE '%/base/%' AND "
                  "json_extract(config_json, '$.build') != 'base'") == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status != 'ok'") == 0);
  const std::string junit = box.read("verdict.xml");
  CHECK_THAT(junit, Contains("<testsuites name=\"gpusweep check spin_check\" tests=\"2\" "
                             "failures=\"2\""));
  CHECK_THAT(junit, Contains("<failure message=\"regression: "));

  // The run is a run like any other: compare shows the two builds apart.
  const auto cmp = box.gpusweep("compare --db results.db --sweep spin_check --format json");
  INFO(cmp.output);
  CHECK(cmp.code == 0);
  CHECK_THAT(cmp.output, Contains("\"build\": \"head\""));
}

TEST_CASE("check passes an identical build from another folder and says so in JSON",
          "[integration][timing]") {
  Sandbox box;
  box.write("s.json", kSweep);
  const auto r = box.gpusweep("check s.json --db results.db --base " + kBase + " --head " + kSame +
                              " --budget-s 120 --format json --output v.json");
  INFO(r.output);
  CHECK(r.code == 0);
  const auto j = nlohmann::json::parse(box.read("v.json"));
  CHECK(j["verdict"] == "no regression");
  CHECK(j["exit"] == 0);
  REQUIRE(j["configs"].size() == 2);
  for (const auto& c : j["configs"]) {
    CHECK(c["verdict"] == "no regression");
    // What the verdict means: a slowdown beyond the tolerance ruled out.
    CHECK(c["low"].get<double>() > 1 - j["tolerance"].get<double>());
  }
  CHECK(j["base"]["hash"] == j["head"]["hash"]);
  CHECK(j["base"]["path"] != j["head"]["path"]);
}

TEST_CASE("check refuses, before anything runs, what cannot be a check", "[integration]") {
  Sandbox box;
  box.write("s.json", kSweep);
  const std::string plugins = GPUSWEEP_TEST_PLUGIN_DIR;
  auto refused = [&](const std::string& args, const std::string& why) {
    const auto r = box.gpusweep("check --db results.db " + args);
    INFO(args << "\n" << r.output);
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Contains(why));
    CHECK_FALSE(std::filesystem::exists(box.db()));
  };
  refused(
      "s.json --base " + kBase + " --head " + kBase,
      "--base and --head are the same file (" + kBase + "): pass --allow-same for an A/A check");
  refused("s.json --base " + kBase + " --head " + plugins + "/gpusweep_faults.so",
          "is workload 'spin_build' and --head " + plugins +
              "/gpusweep_faults.so is 'faults': a check compares two builds of one workload");
  refused("s.json --base " + kBase + " --head " + plugins + "/gpusweep_bad_major.so",
          "does not load: it was built for plugin ABI 2.0");
  refused("s.json --base " + kBase + " --head " + plugins + "/gpusweep_no_entry.so",
          "/gpusweep_no_entry.so does not load: ");
  refused("s.json --base " + kBase + " --head " + box.path("nowhere"),
          "--head " + box.path("nowhere") + ": no such file or folder");
  box.write("u.json", R"({"name": "u", "workload": "spin_build", "base": {"unroll": 2},
    "measure": {"repeats": 3}})");
  refused("u.json --base " + kExtra + " --head " + kBase,
          "the head build (" + kBase + ") cannot run the sweep: ");
  refused("u.json --base " + kExtra + " --head " + kBase,
          "'unroll' is not a setting of workload 'spin_build'");
  refused("s.json --base " + kBase + " --head " + kSame + " --tolerance 5",
          "--tolerance 5: give a percentage (3%) or a fraction (0.03)");
  refused("s.json --base " + kBase + " --head " + kSame + " --set measure.repeats=2",
          "give 3 or more (--set measure.repeats=3)");
  // A check's stored sweep is no sweep for run (or resume): its build axis
  // would reach the workload as a setting.
  box.write("c.json",
            R"({"name": "c", "workload": "spin_build", "grid": {"build": ["base", "head"]},
    "check": {"tolerance": 0.03}})");
  const auto run = box.gpusweep("run c.json --db results.db");
  CHECK(run.code == 2);
  CHECK_THAT(run.output, Contains("c.json: check: this sweep is a check of two builds"));
  refused("c.json --base " + kBase + " --head " + kSame, "this is a check's stored sweep");
}

TEST_CASE("history marks the step a slower build made, and --confirm re-measures its builds",
          "[integration][timing]") {
  Sandbox box;
  box.write("h.json", R"({"name": "spin_hist", "workload": "spin_build",
    "base": {"spin_us": 2000},
    "measure": {"warmup_steps": 5, "block_s": 0.1, "blocks": 5, "repeats": 3}})");
  // Three runs of base, then three of slow50: the fewest a change point
  // needs, and a step a busy machine's noise cannot hide (the step's size is
  // not what this test is about).
  for (const auto& build : {kBase, kBase, kBase, kSlow50, kSlow50, kSlow50}) {
    const auto r = box.gpusweep("run h.json --db results.db --plugin-path " + build);
    REQUIRE(r.code == 0);
  }
  const auto h = box.gpusweep("history spin_build --db results.db");
  INFO(h.output);
  REQUIRE(h.code == 0);
  CHECK_THAT(h.output, Contains("change point at run 4 ("));
  CHECK_THAT(h.output, Contains("build 1.0.0 "));

  const auto c = box.gpusweep("history spin_build --db results.db --confirm --budget-s 120");
  INFO(c.output);
  CHECK(c.code == 0);
  CHECK_THAT(c.output, Contains("check 'confirm-spin_hist' (run 7): regression"));
  CHECK_THAT(c.output, Contains("series 1, the change at run 4 ("));
  CHECK_THAT(c.output, Contains("% slower): confirmed, the build's: the builds re-measured "
                                "together: "));
  // The confirmation's check is in the database, and no point of the series.
  CHECK(box.count("SELECT count(*) FROM sweeps WHERE name = 'confirm-spin_hist'") == 1);
  const auto again = box.gpusweep("history spin_build --db results.db --format json");
  CHECK(nlohmann::json::parse(again.output)["series"][0]["points"].size() == 6);
  // --since: a date before every run keeps them all and says so, one after
  // them leaves none, and a malformed one is refused with the form to give.
  const auto all = box.gpusweep("history spin_build --db results.db --since 2000-01-01");
  CHECK_THAT(all.output, Contains("runs from 2000-01-01 on (--since)"));
  CHECK_THAT(all.output, Contains("change point at run 4 ("));
  const auto later = box.gpusweep("history spin_build --db results.db --since '2999-01-01 00:00'");
  CHECK(later.code == 0);
  CHECK_THAT(later.output, Contains("no finished run matches"));
  const auto bad = box.gpusweep("history spin_build --db results.db --since yesterday");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.output, Contains("--since 'yesterday': give a UTC date or time"));

  // A build rebuilt in place cannot be re-measured: its file holds another.
  const std::string so = "/gpusweep_spin_build.so";
  std::filesystem::create_directories(box.path("plug"));
  for (const auto& build : {kBase, kBase, kBase, kSlow50, kSlow50, kSlow50}) {
    std::filesystem::copy_file(build + so, box.path("plug") + so,
                               std::filesystem::copy_options::overwrite_existing);
    REQUIRE(box.gpusweep("run h.json --db inplace.db --plugin-path plug").code == 0);
  }
  const auto gone = box.gpusweep("history spin_build --db inplace.db --confirm");
  INFO(gone.output);
  CHECK(gone.code == 0);
  CHECK_THAT(gone.output, Contains("the change at run 4 ("));
  CHECK_THAT(gone.output,
             Contains("cannot confirm: " + box.path("plug") + so + " now holds build "));
  CHECK_THAT(gone.output, Contains("run 3 ran: keep each build's file to confirm"));
  CHECK(gpusweep::test::count_in(box.path("inplace.db"),
                                 "SELECT count(*) FROM sweeps WHERE name LIKE 'confirm-%'") == 0);
}

TEST_CASE("run, resume and check keep their tables on stdout and progress on stderr",
          "[integration]") {
  Sandbox box;
  box.write("s.json", R"({"name": "streams", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "measure": {"min_block_s": 0, "warmup_steps": 1, "steps_per_block": 20, "blocks": 5,
                "repeats": 1}})");
  auto apart = [&box](const std::string& args) {
    const int code =
        gpusweep::test::run_shell("cd '" + box.path("") + "' && GPUSWEEP_PLUGIN_PATH='" +
                                  GPUSWEEP_TEST_PLUGIN_DIR + "' '" + GPUSWEEP_BIN + "' " + args +
                                  " > out.txt 2> err.txt")
            .code;
    return std::tuple{code, box.read("out.txt"), box.read("err.txt")};
  };
  const auto [code, out, err] = apart("run s.json --db results.db");
  INFO("stdout:\n" << out << "\nstderr:\n" << err);
  CHECK(code == 0);
  // The header and the results table on stdout, alone.
  CHECK_THAT(out, Contains("sweep 'streams' (run 1) into results.db: 2 trials to run"));
  CHECK_THAT(out, Contains("batch_size"));
  CHECK_THAT(out, Contains("steps/s"));
  CHECK_THAT(out, !Contains("[1/2]"));
  // A line a trial on stderr, and nothing of the table.
  CHECK_THAT(err, Contains("[1/2]"));
  CHECK_THAT(err, Contains("[2/2]"));
  CHECK_THAT(err, !Contains("sweep 'streams'"));

  const auto [rcode, rout, rerr] = apart("resume streams --db results.db");
  INFO("resume stdout:\n" << rout << "\nstderr:\n" << rerr);
  CHECK(rcode == 0);
  CHECK_THAT(rout, Contains("0 trials to run, 2 already finished"));
  CHECK_THAT(rout, Contains("steps/s"));
  CHECK_THAT(rerr, !Contains("steps/s"));

  box.write("c.json", R"({"name": "streams_check", "workload": "spin_build",
    "base": {"spin_us": 300},
    "measure": {"warmup_steps": 2, "block_s": 0.05, "blocks": 5, "repeats": 3}})");
  const std::string builds = " --base " + kBase + " --head " + kSame;
  const auto [ccode, cout_, cerr] =
      apart("check c.json --db results.db --budget-s 15 --inconclusive pass" + builds);
  INFO("check stdout:\n" << cout_ << "\nstderr:\n" << cerr);
  CHECK(ccode == 0);
  CHECK_THAT(cout_, Contains("check 'streams_check' (run 2): "));
  CHECK_THAT(cout_, Contains("head/base"));
  CHECK_THAT(cerr, Contains("[1/"));
  CHECK_THAT(cerr, !Contains("head/base"));
  // A machine-readable format on stdout keeps everything else off it.
  const auto [jcode, jout, jerr] = apart(
      "check c.json --db results.db --budget-s 15 --inconclusive pass --format json" + builds);
  INFO("check --format json stdout:\n" << jout << "\nstderr:\n" << jerr);
  CHECK(jcode == 0);
  const auto j = nlohmann::json::parse(jout);
  CHECK(j["sweep"] == "streams_check");
  CHECK_THAT(jerr, Contains("sweep 'streams_check'"));
}
