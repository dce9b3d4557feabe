// `gpusweep tune` end to end on noop, whose throughput is batch_size per
// spin_us: a space of 9 configs with one clear best (batch 4, 100 us) that
// runs 16x the baseline (batch 1, 400 us). The race, its report, its JSON,
// resuming after SIGKILL with nothing run twice, and its refusals.
#include "harness.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <csignal>
#include <thread>

using namespace gpusweep;
using namespace gpusweep::test;
using Catch::Matchers::Contains;

namespace {

const char* kSpace = R"({"name": "t", "workload": "noop",
  "grid": {"batch_size": {"min": 1, "max": 4, "scale": "pow2"}, "spin_us": [400, 200, 100]},
  "measure": {"warmup_steps": 2, "steps_per_block": 120, "blocks": 5}})";

// Trials that ran ok more than once for one config in one round: none may.
int64_t doubles(const Sandbox& box) {
  return box.count(
      "SELECT count(*) FROM (SELECT config_index, repeat FROM trials WHERE status = 'ok' "
      "GROUP BY config_index, repeat HAVING count(*) > 1)");
}

}  // namespace

TEST_CASE("tune races a space to its best config, confirmed against the baseline",
          "[integration][tune][timing]") {
  Sandbox box;
  box.write("s.json", kSpace);
  const auto r = box.gpusweep("tune s.json --db results.db --budget 5m");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("9 configs (2 knobs)") && Contains("after round") &&
                           Contains("best throughput: config ") &&
                           Contains("(batch_size=4 spin_us=100.0)") &&
                           Contains("vs the baseline (batch_size=1 spin_us=400.0)") &&
                           Contains("\"spin_us\": 100.0"));
  // Every trial is an ordinary trial; the confirmation's are rounds of their own.
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'pending'") == 0);
  // At least the 3 planned rounds; more when the interval was not yet
  // within +-2% (a loaded machine).
  const int64_t confirming =
      box.count("SELECT count(DISTINCT repeat) FROM trials WHERE repeat >= 1000000");
  CHECK(confirming >= 3);
  CHECK(box.count("SELECT count(*) FROM trials WHERE repeat >= 1000000 AND config_index = 8") ==
        confirming);
  CHECK(box.count("SELECT count(*) FROM sweeps WHERE status = 'finished'") == 1);
  CHECK(doubles(box) == 0);
  // The report shows the race.
  const auto rep = box.gpusweep("report --db results.db --html r.html");
  REQUIRE(rep.code == 0);
  const std::string html = box.read("r.html");
  CHECK_THAT(html, Contains("The race") && Contains("decided") && Contains("joined"));
  // compare reads the confirmation rounds (fresh data: the winner, the
  // runner-up and the baseline), and the racing rounds only when asked.
  const auto fresh = box.gpusweep("compare --db results.db --format json");
  REQUIRE(fresh.code == 0);
  const auto confirmed = nlohmann::json::parse(fresh.output);
  CHECK(confirmed.size() == 3);
  for (const auto& row : confirmed) {
    CHECK(box.count("SELECT count(*) FROM trials WHERE repeat >= 1000000 AND config_index = " +
                    std::to_string(row["config"].get<int>() - 1)) == confirming);
  }
  const auto all = box.gpusweep("compare --db results.db --format json --selection-data");
  REQUIRE(all.code == 0);
  CHECK(nlohmann::json::parse(all.output).size() > confirmed.size());
  const auto table = box.gpusweep("compare --db results.db");
  CHECK_THAT(table.output, Contains("fresh confirmation rounds only"));
  // best picks among the confirmed configs: the winner.
  const auto best = box.gpusweep("best --db results.db --format json");
  INFO(best.output);
  const auto pick = nlohmann::json::parse(best.output);
  CHECK(pick["configs"] == 3);
  CHECK(pick["best"]["settings"]["spin_us"] == 100.0);
}

TEST_CASE("tune's answer as JSON, with its evidence", "[integration][tune]") {
  Sandbox box;
  box.write("s.json", kSpace);
  const auto r =
      run_shell("cd '" + box.path("") + "' && GPUSWEEP_PLUGIN_PATH='" + GPUSWEEP_TEST_PLUGIN_DIR +
                "' '" + GPUSWEEP_BIN + "' tune s.json --db results.db --format json 2>/dev/null");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["winner"]["settings"] == "batch_size=4 spin_us=100.0");
  const auto& vs = j["winner"]["vs_baseline"];
  REQUIRE(vs.is_object());
  CHECK(vs["low"].get<double>() > 8);
  CHECK(vs["high"].get<double>() < 32);
  CHECK(j["winner"]["snippet"]["base"]["batch_size"] == 4);
  bool dropped = false;
  for (const auto& e : j["events"]) dropped = dropped || e["event"] == "dropped";
  CHECK(dropped);
}

TEST_CASE("a tune killed mid-race resumes with nothing lost or run twice", "[integration][tune]") {
  Sandbox box;
  box.write("s.json", kSpace);
  const pid_t pid = box.start("tune s.json --db results.db", "log.txt");
  // Kill it once a few trials are in.
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (box.has_tables() && box.count("SELECT count(*) FROM trials WHERE status = 'ok'") >= 7) {
      break;
    }
  }
  ::kill(pid, SIGKILL);
  Sandbox::wait(pid);
  const int64_t before = box.count("SELECT count(*) FROM trials WHERE status = 'ok'");
  REQUIRE(before >= 7);
  const int64_t first_ok = box.count("SELECT min(id) FROM trials WHERE status = 'ok'");
  const auto r = box.gpusweep("tune s.json --db results.db --resume");
  INFO(box.read("log.txt") << r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("(batch_size=4 spin_us=100.0)"));
  // The same run, the finished trials kept, none run twice.
  CHECK(box.count("SELECT count(*) FROM sweeps") == 1);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok' AND id <= " +
                  std::to_string(first_ok + before - 1)) >= before);
  CHECK(doubles(box) == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status IN ('pending', 'interrupted')") == 0);
}

TEST_CASE("tune refuses what it cannot do, naming the fix", "[integration][tune]") {
  Sandbox box;
  box.write("s.json", kSpace);
  auto r = box.gpusweep("tune s.json --budget soon");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--budget 'soon'") && Contains("20m"));
  r = box.gpusweep("tune s.json --objective speed");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("step_time"));
  r = box.gpusweep("tune s.json --constraint 'peak_memory<<1'");
  CHECK(r.code == 2);
  // GPU trials taking turns: a waiting one keeps its memory, and an
  // out-of-memory could be its neighbour's doing.
  box.write("g.json", R"({"name": "g", "workload": "dqn", "base": {"device": "cuda"},
    "grid": {"threads": [1, 2]}, "measure": {"interleave": 2}})");
  r = box.gpusweep("tune g.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("does not interleave GPU trials") && Contains("interleave to 1"));
  box.write("p.json", R"({"name": "p", "workload": "noop", "grid": {"spin_us": [1, 2]},
    "measure": {"precision": 0.01}})");
  r = box.gpusweep("tune p.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("measure.precision"));
  box.write("g.json",
            R"({"name": "g", "workload": "noop", "grid": {"spin_us": {"min": 1, "max": 8}}})");
  r = box.gpusweep("tune g.json");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("grid.spin_us.scale"));
  box.write("n.json", R"({"name": "n", "workload": "noop"})");
  r = box.gpusweep("tune n.json --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("a tune needs knobs"));
  CHECK_FALSE(box.has_tables());
  CHECK(box.gpusweep("tune --help").code == 0);
}
