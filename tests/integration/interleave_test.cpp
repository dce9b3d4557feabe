// Interleaved execution (measure.interleave): the trials of a window take
// turns block by block, and what the database says about it.
#include "harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;

namespace {

// Three configs of about 0.35 s of spinning each (6 blocks of 20 steps).
constexpr const char* kTurnsSweep = R"({"name": "turns", "workload": "noop",
  "base": {"spin_us": 1500}, "grid": {"seed": [0, 1, 2]},
  "measure": {"repeats": 1, "warmup_steps": 5, "steps_per_block": 20, "blocks": 6, "timeout_s": 60)";

}  // namespace

TEST_CASE("interleaved trials take one turn each per cycle and never run at once",
          "[integration][interleave]") {
  Sandbox box;
  box.write("s.json", std::string(kTurnsSweep) + "}}");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("interleaved: 3 trials alive at once take turns"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 3);
  // One group for the run, and every block stamped with its cycle.
  CHECK(box.count("SELECT count(DISTINCT interleave_group) FROM trials") == 1);
  CHECK(box.count("SELECT count(*) FROM blocks WHERE cycle IS NULL") == 0);
  // Each cycle gave each trial exactly one block: 6 cycles of 3 blocks.
  CHECK(box.count("SELECT count(DISTINCT cycle) FROM blocks") == 6);
  CHECK(box.count("SELECT count(*) FROM (SELECT cycle, count(DISTINCT trial_id) AS n FROM blocks "
                  "GROUP BY cycle) WHERE n = 3") == 6);
  // Their lives overlapped (all three were alive together) ...
  CHECK(box.text("SELECT max(started_at) < min(finished_at) FROM trials") == "1");
  // ... but their turns did not: the host let one run at a time.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'overlap_fraction' AND value = 0") ==
        3);
  // The turns, not the waits, are the trial's running time.
  const double turn_s = std::stod(box.text("SELECT avg(value) FROM metrics WHERE name = 'turn_s'"));
  const double wall_s = std::stod(box.text("SELECT avg(wall_s) FROM trials"));
  CHECK(turn_s < 0.6 * wall_s);
}

TEST_CASE("measure.interleave 1 runs trials one after another, without gates",
          "[integration][interleave]") {
  Sandbox box;
  box.write("s.json", std::string(kTurnsSweep) + R"(, "interleave": 1}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("one after another"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE interleave_group IS NOT NULL") == 0);
  CHECK(box.count("SELECT count(*) FROM blocks WHERE cycle IS NOT NULL") == 0);
  // Each trial ended before the next began.
  CHECK(box.count("SELECT count(*) FROM trials a JOIN trials b ON a.id < b.id "
                  "WHERE b.started_at < a.finished_at") == 0);
}

TEST_CASE("an interleaved trial's timeout counts its own turns, not its waits",
          "[integration][interleave]") {
  Sandbox box;
  // Eight trials of about 0.3 s of turns each wait for the others' 2.1 s:
  // a timeout of 1.5 s on the wall clock would end most of them, and one on
  // their own turns leaves them five times what they need (a machine that
  // builds LibTorch beside the suite stretched 0.4 s of turns past 0.9 s).
  box.write("s.json", R"({"name": "patient", "workload": "noop",
    "base": {"spin_us": 2000}, "grid": {"seed": [0, 1, 2, 3, 4, 5, 6, 7]},
    "measure": {"repeats": 1, "warmup_steps": 5, "steps_per_block": 20, "blocks": 7, "timeout_s": 1.5}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 8);
  // Every trial was alive through every other's blocks (their lives
  // overlap: the last to start began before the first to finish ended), so
  // each life held all eight trials' measured steps: 8 x 140 steps of 2 ms
  // spun, 2.24 s by design, past the 1.5 s timeout, and none was ended.
  CHECK(box.text("SELECT max(started_at) < min(finished_at) FROM trials") == "1");
  CHECK(box.count("SELECT sum(steps) FROM blocks") == 8 * 140);
  // A trial whose own turns outlast it still times out.
  box.write("slow.json", R"({"name": "slow", "workload": "noop",
    "base": {"spin_us": 20000}, "grid": {"seed": [0, 1]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 20, "blocks": 6, "timeout_s": 0.9}})");
  const auto slow = box.gpusweep("run slow.json --db results.db");
  INFO(slow.output);
  CHECK(box.count("SELECT count(*) FROM trials t JOIN sweeps s ON s.id = t.sweep_id "
                  "WHERE s.name = 'slow' AND t.status = 'timeout'") == 2);
}

TEST_CASE("measure.precision adds rounds until the ratios are precise, within the budget",
          "[integration][precision][timing]") {
  Sandbox box;
  // A/A (seed 0 and 1) and a config 30% slower; short trials.
  box.write("p.json", R"({"name": "precise", "workload": "noop",
    "grid": {"spin_us": [500, 650], "seed": [0, 1]},
    "baseline": {"spin_us": 500, "seed": 0},
    "measure": {"warmup_steps": 5, "steps_per_block": 60, "blocks": 5, "repeats": 3,
                "precision": 0.02, "budget_s": 40}})");
  const auto r = box.gpusweep("run p.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("after 3 rounds:"));
  // On a quiet machine the target is met; on a loaded one (the suite runs
  // tests side by side) the budget may end it first, and says so: one of
  // the two, and when met, every interval below is checked against it.
  const bool met = r.output.find("done: every config is within the target") != std::string::npos;
  const bool overrun = r.output.find("overrun measure.budget_s") != std::string::npos;
  CHECK(met != overrun);
  // Added trials are ordinary trials: ok, numbered as further repeats.
  CHECK(box.count("SELECT count(*) FROM trials WHERE status != 'ok'") == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE config_index = 0") ==
        box.count("SELECT max(repeat) + 1 FROM trials"));
  const auto c = box.gpusweep("compare precise --db results.db --format json");
  INFO(c.output);
  const auto rows = nlohmann::json::parse(c.output);
  for (const auto& row : rows) {
    if (row["baseline"].get<bool>()) continue;
    const double ratio = row["ratio"], low = row["ci_low"], high = row["ci_high"];
    const bool slower = row["spin_us"] == 650;
    // Each is precise or clearly apart; the slower one is called so.
    if (met) CHECK(((high - low) / 2 / ratio <= 0.02 || high < 0.98 || low > 1.02));
    if (slower) CHECK(row["verdict"] == "slower");
  }

  // A target out of reach stops at the budget and says so.
  box.write("q.json", R"({"name": "budget", "workload": "noop", "grid": {"seed": [0, 1]},
    "base": {"spin_us": 200}, "measure": {"warmup_steps": 5, "steps_per_block": 60,
    "blocks": 5, "precision": 0.00001, "budget_s": 2}})");
  const auto q = box.gpusweep("run q.json --db results.db");
  INFO(q.output);
  CHECK(q.code == 0);
  CHECK_THAT(q.output, Contains("overrun measure.budget_s"));
  // And said so up front, at the first look, with the rounds it would take.
  CHECK_THAT(q.output, Contains("note: the target looks out of reach in the budget") &&
                           Contains("would take more than 100 rounds"));
}

TEST_CASE("warmup goes on until block times settle, and records the transient apart",
          "[integration][warmup]") {
  Sandbox box;
  // A step of 1 ms plus 4 ms decaying by a tenth a step (autotuning, say).
  box.write("w.json", R"({"name": "settle", "workload": "faults",
    "base": {"mode": "transient"}, "grid": {"seed": [0]},
    "measure": {"repeats": 1, "warmup_steps": 5, "steps_per_block": 20, "blocks": 5,
                "stable_warmup": true}})");
  // Wall-clock windows of 5 ms judge stability: on a loaded machine (the test
  // suite runs in parallel) a preempted window can keep warmup from settling
  // once. The effect is deterministic on a quiet core, so up to three runs
  // are tried; without stable warmup every one of them fails.
  struct Run {
    std::string stable;
    int64_t windows = 0;
    double first_step = 0;
    double transient_ms = 0;  // what the fixture's decay left in the first block
  };
  const auto run = [&](int attempt) {
    const std::string db = "stable" + std::to_string(attempt) + ".db";
    const auto r = box.gpusweep("run w.json --db " + db);
    INFO(r.output);
    REQUIRE(r.code == 0);
    const auto text = [&](const std::string& sql) {
      return gpusweep::test::text_in(box.path(db), sql);
    };
    Run out;
    out.stable = text("SELECT value FROM metrics WHERE name = 'warmup_stable'");
    out.windows =
        std::stoll(text("SELECT CAST(value AS INTEGER) FROM metrics WHERE "
                        "name = 'warmup_windows'"));
    out.first_step = std::stod(text("SELECT value FROM metrics WHERE name = 'first_step_s'"));
    // The fixture's decay, 4 ms x 0.9^i at its i-th step (its step counter
    // is 1 at the first): what is left of it over the first block's 20
    // steps, from the steps warmup took (the plugin's count, not a clock).
    const int64_t before = std::stoll(
        text("SELECT CAST(value AS INTEGER) FROM metrics WHERE name = 'steps_before_measure'"));
    for (int64_t i = before + 1; i <= before + 20; ++i) out.transient_ms += 4 * std::pow(0.9, i);
    return out;
  };
  Run got;
  for (int attempt = 0; attempt < 3; ++attempt) {
    got = run(attempt);
    if (got.stable == "1.0" && got.transient_ms < 1) break;
  }
  CHECK(got.stable == "1.0");
  CHECK(got.windows > 3);
  // The first step's cost is kept, apart from the blocks.
  CHECK(got.first_step > 0.004);
  // No block carries the transient: what warmup left of it is under 5% of
  // the first block's 20 ms of steady steps (a clock's comparison of the
  // first block with the others failed by 1.3% on a loaded machine).
  CHECK(got.transient_ms < 1);

  // A fixed warmup of 5 steps leaves the transient in the first block (about
  // twice the others: 21 ms of transient on a 20 ms block).
  const auto fixed =
      box.gpusweep("run w.json --db fixed.db --set name=fixed --set measure.stable_warmup=false");
  INFO(fixed.output);
  REQUIRE(fixed.code == 0);
  // Judged, as above, from the steps warmup took (a clock's comparison of
  // the first block with the others failed on a loaded machine: its steady
  // blocks ran at 46% cv).
  const int64_t fixed_before = std::stoll(gpusweep::test::text_in(
      box.path("fixed.db"),
      "SELECT CAST(value AS INTEGER) FROM metrics WHERE name = 'steps_before_measure'"));
  double fixed_transient_ms = 0;
  for (int64_t i = fixed_before + 1; i <= fixed_before + 20; ++i) {
    fixed_transient_ms += 4 * std::pow(0.9, i);
  }
  CHECK(fixed_before <= 6);        // the 5 warmup steps (and the first step's probe), no more
  CHECK(fixed_transient_ms > 10);  // over half the first block's 20 ms of steady steps
}

TEST_CASE("compare and best read block series to the numbers the blocks give",
          "[integration][interleave][series]") {
  Sandbox box;
  // Two repeats of three configs, interleaved: ratios paired by cycle.
  box.write("s.json", R"({"name": "series", "workload": "noop",
    "base": {"spin_us": 300}, "grid": {"seed": [0, 1, 2]},
    "measure": {"repeats": 2, "warmup_steps": 5, "steps_per_block": 25, "blocks": 8,
                "timeout_s": 60}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM block_series WHERE blocks = 8 AND cycles IS NOT NULL") ==
        6);
  const auto read = [&](const std::string& db) {
    std::string out;
    for (const char* cmd :
         {"compare --format json", "compare --knobs --format json", "best --format json"}) {
      const auto c = box.gpusweep(std::string(cmd) + " --db " + db);
      INFO(c.output);
      REQUIRE(c.code == 0);
      out += c.output;
    }
    return out;
  };
  const std::string with_series = read("results.db");
  // The same database with its series gone: every command reads the blocks.
  {
    gpusweep::db::Connection c(box.path("results.db"), gpusweep::db::Connection::Mode::read_write);
    c.exec("VACUUM INTO '" + box.path("blocks.db") + "'");
  }
  {
    gpusweep::db::Connection c(box.path("blocks.db"), gpusweep::db::Connection::Mode::read_write);
    c.exec("DELETE FROM block_series");
  }
  CHECK(gpusweep::test::count_in(box.path("blocks.db"), "SELECT count(*) FROM block_series") == 0);
  CHECK(read("blocks.db") == with_series);
  CHECK_THAT(with_series, Contains("\"ratio\""));
}

TEST_CASE("a window's trials start in the plan's order, repeats sharing the window included",
          "[integration][interleave][position]") {
  // An A/A pair of the position fixture, default protocol: vary_seed makes
  // all six trials' configs distinct, so "auto" puts them in one window.
  // The fixture logs each trial's start (create(), in its first turn) in
  // GPUSWEEP_POSITION_DIR: position, twin, seed. Before issue 45 the
  // window's first shuffled cycle decided that order, one draw for all
  // three repeats.
  Sandbox box;
  box.write("s.json", R"({"name": "pos", "workload": "position",
    "base": {"spin_us": 200, "mode": "none"}, "grid": {"twin": [0, 1]}, "baseline": {"twin": 0},
    "measure": {"warmup_steps": 2, "steps_per_block": 10, "blocks": 5, "timeout_s": 60,
                "min_block_s": 0}})");
  const std::string dir = box.path("pos");
  REQUIRE(std::system(("mkdir -p '" + dir + "'").c_str()) == 0);
  ::setenv("GPUSWEEP_POSITION_DIR", dir.c_str(), 1);
  const auto r = box.gpusweep("run s.json --db results.db");
  ::unsetenv("GPUSWEEP_POSITION_DIR");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("interleaved: 6 trials alive at once"));
  // "twin:seed" of each trial in plan order (ordinals), and in start order.
  const std::string planned = box.text(
      "SELECT group_concat(x, ' ') FROM (SELECT json_extract(t.config_json, '$.twin') || ':' || "
      "coalesce((SELECT CAST(m.value AS INTEGER) FROM metrics m WHERE m.trial_id = t.id AND "
      "m.name = 'seed'), 0) AS x FROM trials t ORDER BY t.ordinal)");
  std::string started;
  std::istringstream log(box.read("pos/starts"));
  int expected = 0;
  for (long long p, twin, seed; log >> p >> twin >> seed; ++expected) {
    CHECK(p == expected);
    started += (started.empty() ? "" : " ") + std::to_string(twin) + ":" + std::to_string(seed);
  }
  CHECK(expected == 6);
  CHECK(started == planned);
  // Each mirrored pair of rounds (repeats 1 and 2) puts each twin in both
  // of its places: the first two starts and the next two are mirror images.
  CHECK(box.count("SELECT count(*) FROM trials a JOIN trials b ON a.repeat = 0 AND b.repeat = 1 "
                  "AND a.config_index = b.config_index AND a.ordinal + b.ordinal = 3") == 2);
}

namespace {

// One trial's phases from the position fixture's GPUSWEEP_PHASES_LOG.
struct Phases {
  std::pair<int64_t, int64_t> create{0, 0}, eval{0, 0};
  std::vector<std::pair<int64_t, int64_t>> steps;
  int64_t busy_begin = 0, busy_end = 0;
};

std::map<long, Phases> read_phases(const std::string& text) {
  std::map<long, Phases> by_pid;
  std::istringstream in(text);
  long pid = 0;
  std::string kind;
  int64_t b = 0, e = 0;
  while (in >> pid >> kind >> b >> e) {
    Phases& p = by_pid[pid];
    if (kind == "create") p.create = {b, e};
    if (kind == "eval") p.eval = {b, e};
    if (kind == "step") p.steps.emplace_back(b, e);
    if (kind == "busy_begin") p.busy_begin = b;
    if (kind == "busy_end") p.busy_end = b;
  }
  return by_pid;
}

bool intersect(std::pair<int64_t, int64_t> a, std::pair<int64_t, int64_t> b) {
  return a.first < b.second && b.first < a.second;
}

// Runs position trials (spin_us 300, 350, 400, and 450 with four) taking
// turns `window` at a time with measure.starts `starts`, each set up in
// 0.4 s and evaluated in 0.3 s; their phases by pid.
std::map<long, Phases> run_starts(const std::string& starts, std::string* output, int window = 3,
                                  int trials = 3) {
  Sandbox box;
  const std::string spins = trials == 4 ? "[300, 350, 400, 450]" : "[300, 350, 400]";
  box.write("s.json", R"({"name": "starts", "workload": "position",
    "base": {"mode": "none", "create_ms": 400, "eval_ms": 300},
    "grid": {"spin_us": )" +
                          spins + R"(}, "baseline": {"spin_us": 300},
    "measure": {"repeats": 1, "warmup_steps": 3, "block_s": 0.03, "blocks": 5, "interleave": )" +
                          std::to_string(window) + R"(,
                "min_block_s": 0, "timeout_s": 60, "starts": ")" +
                          starts + R"("}})");
  const std::string log = box.path("phases.log");
  ::setenv("GPUSWEEP_PHASES_LOG", log.c_str(), 1);
  const auto r = box.gpusweep("run s.json --db results.db");
  ::unsetenv("GPUSWEEP_PHASES_LOG");
  *output = r.output;
  if (r.code != 0 || box.count("SELECT count(*) FROM trials WHERE status = 'ok'") != trials) {
    return {};
  }
  return read_phases(box.read("phases.log"));
}

// Steps after each trial's 3 warmup steps (block sizing and the blocks)
// that ran beside another trial's setup (create and warmup), evaluation or
// timed steps.
int clashes_of(const std::map<long, Phases>& phases) {
  int clashes = 0;
  for (const auto& [pid, p] : phases) {
    for (size_t i = 3; i < p.steps.size(); ++i) {
      for (const auto& [other, q] : phases) {
        if (other == pid) continue;
        clashes += intersect(p.steps[i], {q.create.first, q.steps[2].second});
        clashes += intersect(p.steps[i], q.eval);
        for (size_t j = 3; j < q.steps.size(); ++j) clashes += intersect(p.steps[i], q.steps[j]);
      }
    }
  }
  return clashes;
}

}  // namespace

TEST_CASE("parallel starts: setups and final evaluations run at once, never beside a block",
          "[integration][interleave]") {
  std::string output;
  const auto phases = run_starts("parallel", &output);
  INFO(output);
  CHECK_THAT(output, Contains("setups and final evaluations run all at once"));
  REQUIRE(phases.size() == 3);
  int64_t latest_create = 0, first_created = INT64_MAX, latest_eval = 0,
          first_evaluated = INT64_MAX;
  for (const auto& [pid, p] : phases) {
    REQUIRE(p.steps.size() > 3 + 5);
    latest_create = std::max(latest_create, p.create.first);
    first_created = std::min(first_created, p.create.second);
    latest_eval = std::max(latest_eval, p.eval.first);
    first_evaluated = std::min(first_evaluated, p.eval.second);
  }
  // All three set up together, and all three evaluated together.
  CHECK(latest_create < first_created);
  CHECK(latest_eval < first_evaluated);
  // A trial's steps after its 3 warmup steps (block sizing and the blocks)
  // ran in turns of their own.
  CHECK(clashes_of(phases) == 0);
}

TEST_CASE("parallel starts in a sliding window: the next trials set up together, beside no block",
          "[integration][interleave]") {
  // Four trials, two at a time: the second pair starts as the first ends.
  std::string output;
  const auto phases = run_starts("parallel", &output, /*window=*/2, /*trials=*/4);
  INFO(output);
  REQUIRE(phases.size() == 4);
  CHECK(clashes_of(phases) == 0);
  // Two pairs of setups at once.
  int together = 0;
  for (const auto& [pid, p] : phases) {
    for (const auto& [other, q] : phases) together += pid < other && intersect(p.create, q.create);
  }
  CHECK(together == 2);
}

TEST_CASE(
    "measure.busy_share runs one more block between the device-busy calls and stores the "
    "share",
    "[integration][interleave]") {
  for (const double share : {0.5, 0.0}) {  // 0: a device without activity records
    Sandbox box;
    box.write("s.json", R"({"name": "busy", "workload": "position",
      "base": {"mode": "none", "spin_us": 500, "busy_share": )" +
                            std::to_string(share) + R"(}, "grid": {"twin": [0, 1]},
      "measure": {"repeats": 1, "warmup_steps": 3, "steps_per_block": 20, "blocks": 5,
                  "interleave": 1, "busy_share": true, "timeout_s": 60}})");
    const std::string log = box.path("phases.log");
    ::setenv("GPUSWEEP_PHASES_LOG", log.c_str(), 1);
    const auto r = box.gpusweep("run s.json --db results.db");
    ::unsetenv("GPUSWEEP_PHASES_LOG");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
    const auto phases = read_phases(box.read("phases.log"));
    REQUIRE(phases.size() == 2);
    for (const auto& [pid, p] : phases) {
      if (share > 0) {
        // Warmup, the probe's block of 20 steps, then 5 blocks of 20.
        CHECK(p.steps.size() == 3 + 20 + 100);
        int inside = 0;
        for (const auto& st : p.steps)
          inside += st.first >= p.busy_begin && st.second <= p.busy_end;
        CHECK(inside == 20);
      } else {
        CHECK(p.steps.size() == 3 + 100);  // no records: no extra steps
      }
    }
    const std::string stored = box.text(
        "SELECT count(*) || ' ' || coalesce(min(value), -1) || ' ' || coalesce(max(value), -1) "
        "FROM metrics WHERE name = 'gpu_busy_share'");
    INFO(stored);
    std::istringstream in(stored);
    double n = 0, lo = 0, hi = 0;
    in >> n >> lo >> hi;
    if (share > 0) {
      // The fixture reports half of its begin-to-end time; the host divides
      // by the steps' time to their sync, a little less.
      CHECK(n == 2);
      CHECK(lo > 0.4);
      CHECK(hi <= 0.6);
    } else {
      CHECK(n == 0);
    }
  }
}

TEST_CASE("serial starts: each trial sets up and evaluates in a turn of its own",
          "[integration][interleave]") {
  std::string output;
  const auto phases = run_starts("serial", &output);
  INFO(output);
  REQUIRE(phases.size() == 3);
  int overlapping = 0;
  for (const auto& [pid, p] : phases) {
    for (const auto& [other, q] : phases) {
      if (other == pid) continue;
      overlapping += intersect(p.create, q.create) + intersect(p.eval, q.eval);
    }
  }
  CHECK(overlapping == 0);
}
