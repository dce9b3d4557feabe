// Time to quality (measure.target) on noop's learning mode: trials train
// until an evaluation reaches the target or the budget ends (censored), the
// time is interpolated on the training clock, and the curve is stored.
#include "harness.hpp"

#include <gpusweep/random.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

using namespace gpusweep;
using Catch::Matchers::Contains;
using test::Sandbox;

TEST_CASE("a target run trains until the target, and censors a trial that runs out of budget",
          "[integration][target]") {
  Sandbox box;
  // learn_steps 300: quality reaches 0.9 after about 270 steps of 200 us
  // (a seed's draw moves it by its cv, 20%); 1e9: never, so the 0.4 s budget
  // ends it.
  box.write("t.json", R"({"name": "ttq", "workload": "noop",
    "base": {"spin_us": 200},
    "grid": {"learn_steps": [300, 1e9]},
    "measure": {"target": {"value": 0.9, "max_s": 0.4}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 3, "min_block_s": 0}})");
  // The plan says what a trial does.
  CHECK_THAT(box.gpusweep("run t.json --dry-run").output,
             Contains("blocks of 10 steps until quality reaches 0.9 (censored after 400 ms of "
                      "training)"));
  const auto r = box.gpusweep("run t.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 6);
  auto stat = [&](int config, int repeat, const std::string& name) {
    return box.text(
        "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id "
        "WHERE t.config_index = " +
        std::to_string(config) + " AND t.repeat = " + std::to_string(repeat) +
        " AND m.kind = 'stat' AND m.name = '" + name + "'");
  };
  for (int repeat = 0; repeat < 3; ++repeat) {
    INFO("repeat " << repeat);
    // Reached: a time within the budget, about 270 steps' worth of the
    // training clock, and at or before the training time spent.
    CHECK(stat(0, repeat, "target_censored") == "0.0");
    const double t = std::stod(stat(0, repeat, "target_time_s"));
    const double train = std::stod(stat(0, repeat, "target_train_s"));
    CHECK(t > 0);
    CHECK(t <= train);
    CHECK(t < 0.4);
    // Censored: its time is the training it had, at least the budget.
    CHECK(stat(1, repeat, "target_censored") == "1.0");
    CHECK(std::stod(stat(1, repeat, "target_time_s")) >= 0.4);
  }
  // Seeds differ by repeat, so the times do.
  CHECK(stat(0, 0, "target_time_s") != stat(0, 1, "target_time_s"));
  // The curve: every evaluation with its training clock, rising to the target.
  const auto points = box.count(
      "SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id "
      "WHERE t.config_index = 0 AND t.repeat = 0 AND m.kind = 'eval' AND m.name = "
      "'gpusweep.train_s'");
  CHECK(points >= 3);
  CHECK(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id "
                  "WHERE t.config_index = 0 AND t.repeat = 0 AND m.kind = 'eval' AND "
                  "m.name = 'quality'") == points);
  CHECK(box.text("SELECT max(m.value) >= 0.9 FROM metrics m JOIN trials t ON t.id = m.trial_id "
                 "WHERE t.config_index = 0 AND m.kind = 'eval' AND m.name = 'quality'") == "1");
  // results shows each trial's time, the censored as lower bounds.
  const auto res = box.gpusweep("results --db results.db");
  CHECK_THAT(res.output, Contains("to target") && Contains("> 4"));
  const auto res_json =
      nlohmann::json::parse(box.gpusweep("results --db results.db --format json").output);
  int res_censored = 0;
  for (const auto& row : res_json) res_censored += row["target_censored"].get<bool>() ? 1 : 0;
  CHECK(res_censored == 3);
  // export carries each trial's time and censoring.
  const auto e = box.gpusweep("export --db results.db --format json");
  REQUIRE(e.code == 0);
  const auto rows = nlohmann::json::parse(e.output);
  REQUIRE(rows.size() == 6);
  int censored = 0;
  for (const auto& row : rows) {
    CHECK(row["target_time_s"].get<double>() > 0);
    censored += row["target_censored"].get<bool>() ? 1 : 0;
  }
  CHECK(censored == 3);
}

TEST_CASE("warmup steps train too: their time is on a target's clock", "[integration][target]") {
  Sandbox box;
  // learn_cv 0: every seed learns in exactly 300 steps, so 0.9 is reached
  // after 270 steps of 200 us, about 54 ms, however many were warmup (100
  // here: without them on the clock it would read about 34 ms).
  box.write("w.json", R"({"name": "warm", "workload": "noop",
    "base": {"spin_us": 200, "learn_steps": 300, "learn_cv": 0},
    "grid": {"seed": [1, 2]},
    "measure": {"target": {"value": 0.9, "max_s": 1}, "warmup_steps": 100,
                "steps_per_block": 10, "repeats": 1, "min_block_s": 0}})");
  const auto r = box.gpusweep("run w.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(std::stod(box.text("SELECT min(value) FROM metrics WHERE name = 'target_time_s'")) > 0.048);
  // Both reached it (a time bound here would fail by chance on a loaded
  // machine: the censored ones would read about max_s, 1 s).
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'target_censored' AND value = 0") ==
        2);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'target_time_s'") == 2);
}

TEST_CASE("costly evaluations space out, and near the target they close in again",
          "[integration][target]") {
  Sandbox box;
  // Each evaluation busy-waits 2 ms against 1 ms of training a block (10
  // steps of 100 us), so the cadence doubles while the target is far; the
  // target (0.9 of 3000 steps: 270 blocks) is then evaluated at a quarter of
  // the blocks left, down to every block, so the last interval before it is
  // short.
  box.write("c.json", R"({"name": "cadence", "workload": "noop",
    "base": {"spin_us": 100, "learn_steps": 3000, "learn_cv": 0, "eval_ms": 2},
    "measure": {"target": {"value": 0.9, "max_s": 30}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 1, "min_block_s": 0}})");
  const auto r = box.gpusweep("run c.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto points =
      box.gpusweep(
             "sql \"SELECT value FROM metrics WHERE kind = 'eval' AND name = 'steps' "
             "ORDER BY value\" --db results.db --format csv")
          .output;
  std::vector<double> steps;
  std::istringstream lines(points);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) steps.push_back(std::stod(line));
  INFO(points);
  REQUIRE(steps.size() >= 4);
  double widest = 0;
  for (size_t i = 1; i < steps.size(); ++i) widest = std::max(widest, steps[i] - steps[i - 1]);
  // Spaced out on the way (at least 8 blocks apart at some point)...
  CHECK(widest >= 80);
  // ...and the last interval, which the time to target interpolates over, at
  // most 4 blocks: the target crossed at step 2700.
  CHECK(steps.back() >= 2700);
  CHECK(steps.back() - steps[steps.size() - 2] <= 40);
}

TEST_CASE("a run whose metric went NaN is censored at once, not trained to its budget",
          "[integration][target]") {
  Sandbox box;
  // The faults fixture's mode nan reports quality NaN (JSON null): diverged.
  box.write("n.json", R"({"name": "nan", "workload": "faults",
    "base": {"mode": "nan"}, "grid": {"seed": [0, 1]},
    "measure": {"target": {"value": 0.5, "max_s": 30}, "steps_per_block": 2,
                "repeats": 1, "min_block_s": 0}})");
  const auto r = box.gpusweep("run n.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'target_diverged' AND value = 1") ==
        2);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'target_censored' AND value = 1") ==
        2);
  CHECK(std::stod(box.text("SELECT max(value) FROM metrics WHERE name = 'target_time_s'")) < 5);
}

TEST_CASE("a target trial killed by timeout_s after evaluating counts as censored, not dropped",
          "[integration][target]") {
  Sandbox box;
  // A max_steps target keeps timeout_s: the hopeless config (learn_steps 1e9,
  // 2 ms a step) is killed at 1.5 s, after several evaluations. Its seeds are
  // censored at their last evaluation's training clock; dropped, they left
  // "reached 0/0" and a median from the survivors only.
  box.write("t.json", R"({"name": "killed", "workload": "noop",
    "base": {"spin_us": 2000},
    "grid": {"learn_steps": [100, 1e9]},
    "measure": {"target": {"value": 0.9, "max_steps": 100000000}, "warmup_steps": 0,
                "steps_per_block": 20, "repeats": 2, "timeout_s": 1.5, "min_block_s": 0}})");
  const auto r = box.gpusweep("run t.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'timeout'") == 2);
  const auto times =
      gpusweep::test::gpusweep_json(box, "compare --db results.db --target --format json");
  REQUIRE(times.size() == 2);
  const auto& killed = times[1];
  CHECK(killed.at("trials") == 2);  // both seeds, censored
  CHECK(killed.at("reached") == 0);
  CHECK(killed.at("beyond_budget") == true);
  // Each seed's bound is its last evaluation's training clock: the median's
  // lower end is their mean (two seeds).
  const double last_clocks = std::stod(box.text(
      "SELECT avg(v) FROM (SELECT (SELECT m.value FROM metrics m WHERE m.trial_id = t.id AND "
      "m.kind = 'eval' AND m.name = 'gpusweep.train_s' ORDER BY m.at_step DESC LIMIT 1) AS v "
      "FROM trials t WHERE t.status = 'timeout')"));
  CHECK(killed.at("median_lower_end_s").get<double>() == Approx(last_clocks));
}

TEST_CASE("a target the workload cannot report or reach is refused before anything runs",
          "[integration][target]") {
  Sandbox box;
  box.write("m.json", R"({"name": "bad", "workload": "noop",
    "measure": {"target": {"metric": "qualty", "value": 0.9, "max_s": 1}}})");
  auto r = box.gpusweep("run m.json --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("m.json") && Contains("measure.target.metric") &&
                           Contains("did you mean 'quality'"));
  box.write("v.json", R"({"name": "bad", "workload": "noop",
    "measure": {"target": {"value": 1.5, "max_s": 1}}})");
  r = box.gpusweep("run v.json --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("measure.target.value") && Contains("[0, 1]"));
  box.write("b.json", R"({"name": "bad", "workload": "noop",
    "measure": {"target": {"value": 0.5}}})");
  r = box.gpusweep("run b.json --db results.db");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("max_s"));
  // tune on time to target needs a target; a target is raced on time only.
  box.write("t.json", R"({"name": "tuned", "workload": "noop", "grid": {"spin_us": [0, 1]},
    "measure": {"target": {"value": 0.5, "max_s": 1}}})");
  r = box.gpusweep("tune t.json --db results.db --budget 5 --objective throughput");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("t.json") && Contains("measure.target") &&
                           Contains("--objective time_to_target"));
  box.write("n.json", R"({"name": "tuned", "workload": "noop", "grid": {"spin_us": [0, 1]}})");
  r = box.gpusweep("tune n.json --db results.db --budget 5 --objective time_to_target");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("n.json") && Contains("tune.objective time_to_target") &&
                           Contains("add one") && Contains("max_s"));
  r = box.gpusweep("tune-batch noop --db results.db --objective time_to_target");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--objective time_to_target") && Contains("measure.target="));
  // tune-batch with a target the workload cannot reach: refused before any probe.
  r = box.gpusweep(
      "tune-batch noop --db results.db --set 'measure.target={\"value\": 5, \"max_s\": 1}'");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("measure.target.value") && Contains("[0, 1]"));
  // Nothing ran: no trial was recorded.
  if (std::filesystem::exists(box.db())) CHECK(box.count("SELECT count(*) FROM trials") == 0);
}

TEST_CASE("a target run killed mid-way resumes with its times, censoring and curves intact",
          "[integration][target][kill]") {
  Sandbox box;
  // 8 configs x 2 repeats: seven that learn (about 0.05 to 0.2 s of 250 us
  // steps to 0.9, times a seed's lognormal draw of cv 20%) and one that
  // never does (censored at 0.6 s).
  box.write("k.json", R"({"name": "ttq_kill", "workload": "noop",
    "base": {"spin_us": 250},
    "grid": {"learn_steps": [200, 300, 400, 500, 600, 700, 800, 1e9]},
    "measure": {"target": {"value": 0.9, "max_s": 0.6}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 2, "min_block_s": 0}})");
  random::SplitMix64 delays(2911);
  int kills = 0;
  for (int round = 0; round < 8; ++round) {
    const pid_t pid = box.start("run k.json --db results.db --resume", "log.txt");
    std::this_thread::sleep_for(std::chrono::milliseconds(random::uniform_int(delays, 200, 900)));
    if (::kill(pid, SIGKILL) == 0) ++kills;
    Sandbox::wait(pid);
  }
  CHECK(kills >= 4);
  const auto r = box.gpusweep("run k.json --db results.db --resume");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials") == 16);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 16);
  // Each trial has its time and censoring once, the never-learning config
  // censored at the budget, the others reached within it.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND name = "
                  "'target_time_s'") == 16);
  CHECK(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
                  "m.name = 'target_censored' AND m.value = 1") == 2);
  CHECK(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
                  "m.name = 'target_censored' AND m.value = 1 AND t.config_index = 7") == 2);
  // Every evaluation of every trial has its clock beside its quality.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'eval' AND name = "
                  "'gpusweep.train_s'") ==
        box.count("SELECT count(*) FROM metrics WHERE kind = 'eval' AND name = 'quality'"));
  CHECK(box.count("SELECT count(*) FROM (SELECT trial_id FROM metrics WHERE kind = 'eval' AND "
                  "name = 'gpusweep.train_s' GROUP BY trial_id HAVING count(*) >= 2)") == 16);
  CHECK(box.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("a target run interleaves one seed's trials at a time, the next seed's after them",
          "[integration][target]") {
  Sandbox box;
  // 3 configs x 3 seeds in a window of 8: a sliding window would hold most
  // of the three seeds at once, and a seed's configs would train at
  // different times (drift between them not cancelled by the pairing).
  box.write("r.json", R"({"name": "rounds", "workload": "noop",
    "base": {"spin_us": 200},
    "grid": {"learn_steps": [200, 300, 400]},
    "measure": {"target": {"value": 0.9, "max_s": 2}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 3, "min_block_s": 0, "interleave": 8}})");
  const auto r = box.gpusweep("run r.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("one seed's trials at a time"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 9);
  // Every seed's trials took turns together, after the seed before them.
  CHECK(box.count("SELECT count(*) FROM trials a JOIN trials b ON b.repeat = a.repeat - 1 "
                  "WHERE a.started_at < b.finished_at") == 0);
  CHECK(box.count("SELECT count(*) FROM trials a JOIN trials b ON b.repeat = a.repeat "
                  "WHERE a.id < b.id AND b.started_at > a.finished_at") == 0);
}

TEST_CASE("adaptive capping stops a round's hopeless trials at slack times its best time",
          "[integration][target][cap]") {
  Sandbox box;
  // learn_steps 300 reaches 0.9 in about 270 steps of 200 us (about 55 ms);
  // 3000 needs ten times that. Capped at 1.5x the round's best, the slow
  // config stops, censored, near 80 ms instead of training for 0.5 s.
  const std::string sweep = R"({"name": "cap", "workload": "noop",
    "base": {"spin_us": 200},
    "grid": {"learn_steps": [300, 3000]},
    "measure": {"target": {"value": 0.9, "max_s": 3, "cap": 1.5}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 2, "min_block_s": 0, "interleave": %s}})";
  auto stat = [&](const std::string& db, int config, int repeat, const std::string& name) {
    // -1 when the trial has no such statistic.
    return std::stod(
        test::text_in(box.path(db),
                      "SELECT coalesce((SELECT m.value FROM metrics m JOIN trials t ON t.id = "
                      "m.trial_id WHERE t.config_index = " +
                          std::to_string(config) + " AND t.repeat = " + std::to_string(repeat) +
                          " AND m.kind = 'stat' AND m.name = '" + name + "'), -1)"));
  };
  {
    std::string text = sweep;
    text.replace(text.find("%s"), 2, "2");
    box.write("plan.json", text);
    CHECK_THAT(box.gpusweep("run plan.json --dry-run").output,
               Contains("or capped at 1.5x the best time to target of its round"));
  }
  for (const std::string interleave : {"2", "1"}) {
    INFO("interleave " << interleave);
    const std::string db = "i" + interleave + ".db";
    std::string text = sweep;
    text.replace(text.find("%s"), 2, interleave);
    box.write("c" + interleave + ".json", text);
    const auto r = box.gpusweep("run c" + interleave + ".json --db " + db);
    INFO(r.output);
    REQUIRE(r.code == 0);
    int capped = 0;
    for (int repeat = 0; repeat < 2; ++repeat) {
      INFO("repeat " << repeat);
      const double best = stat(db, 0, repeat, "target_time_s");
      CHECK(stat(db, 0, repeat, "target_censored") == 0);
      if (stat(db, 1, repeat, "target_capped") != 1) continue;
      ++capped;
      // Censored at the cap (its training time a lower bound), at most a
      // block and an evaluation past it; far short of its own time.
      CHECK(stat(db, 1, repeat, "target_censored") == 1);
      const double train = stat(db, 1, repeat, "target_train_s");
      CHECK(train >= 1.5 * best);
      CHECK(train < 3 * best);
      CHECK(stat(db, 1, repeat, "target_time_s") == train);
    }
    if (interleave == "2") {
      // Taking turns, the fast trial finishes first and caps the slow one
      // at its next turn, in every round.
      CHECK(capped == 2);
    } else {
      // One after another, the cap is given at the start: in the round
      // (of the mirrored pair) where the fast config ran first. In the
      // other the slow one ran first, uncapped, and reached the target.
      CHECK(capped == 1);
      CHECK(test::count_in(box.path(db),
                           "SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id "
                           "WHERE t.config_index = 1 AND m.name = 'target_censored' AND "
                           "m.value = 0") == 1);
    }
  }
  // Slower steps, not more of them: 2 ms steps take ten times as long a
  // block. Taking turns block by block, that config would have trained ten
  // times as long as the fast one, to its own target (about 0.55 s), by the
  // time the fast one reached it; with capping, turns go to the trial that
  // has trained least, so it is capped at 1.5x the fast one's time: the cap
  // it stopped at is that, and it stopped within a block and an evaluation
  // of it (its own clocks).
  box.write("s.json", std::string(R"({"name": "slowsteps", "workload": "noop",
    "base": {"learn_steps": 300}, "grid": {"spin_us": [200, 2000]},
    "measure": {"target": {"value": 0.9, "max_s": 3, "cap": 1.5}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 2, "min_block_s": 0, "interleave": 2}})"));
  {
    const auto r = box.gpusweep("run s.json --db s.db");
    INFO(r.output);
    REQUIRE(r.code == 0);
    for (int repeat = 0; repeat < 2; ++repeat) {
      INFO("repeat " << repeat);
      const double best = stat("s.db", 0, repeat, "target_time_s");
      CHECK(stat("s.db", 1, repeat, "target_capped") == 1);
      const double cap = stat("s.db", 1, repeat, "target_cap_s");
      CHECK(cap == Approx(1.5 * best).epsilon(1e-9));
      const double trained = stat("s.db", 1, repeat, "target_train_s");
      const double block =
          std::stod(test::text_in(box.path("s.db"),
                                  "SELECT max(b.seconds) FROM blocks b JOIN trials t ON t.id = "
                                  "b.trial_id WHERE t.config_index = 1 AND t.repeat = " +
                                      std::to_string(repeat)));
      CHECK(trained >= cap);
      CHECK(trained <= cap + block + stat("s.db", 1, repeat, "target_eval_s"));
    }
  }
  // Without the cap, the slow config trains to its own target: ten times
  // the steps (learn_steps 3000 against 300), uncapped.
  box.write("n.json", std::string(R"({"name": "nocap", "workload": "noop",
    "base": {"spin_us": 200}, "grid": {"learn_steps": [300, 3000]},
    "measure": {"target": {"value": 0.9, "max_s": 3}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 2, "min_block_s": 0}})"));
  REQUIRE(box.gpusweep("run n.json --db n.db").code == 0);
  for (int repeat = 0; repeat < 2; ++repeat) {
    CHECK(stat("n.db", 1, repeat, "target_censored") == 0);
    CHECK(stat("n.db", 1, repeat, "target_capped") == -1);
    CHECK(stat("n.db", 1, repeat, "target_steps") >= 5 * stat("n.db", 0, repeat, "target_steps"));
  }
}

TEST_CASE("a capped run killed after its round's fastest trial caps the rest when resumed",
          "[integration][target][cap][kill]") {
  Sandbox box;
  // One after another (no gates), one round: the slow config is capped only
  // by the fast one's stored time, which the resumed run must read back.
  const std::string sweep = R"({"name": "capresume", "workload": "noop",
    "base": {"spin_us": 200}, "grid": {"learn_steps": [300, 3000]},
    "measure": {"target": {"value": 0.9, "max_s": 3, "cap": 1.5}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 1, "min_block_s": 0, "interleave": 1,
                "order_seed": %d}})";
  auto write = [&](int seed) {
    std::string text = sweep;
    text.replace(text.find("%d"), 2, std::to_string(seed));
    box.write("c.json", text);
  };
  // An order that runs the fast config first (the order is seeded).
  int seed = 0;
  for (; seed < 20; ++seed) {
    write(seed);
    REQUIRE(box.gpusweep("run c.json --db probe" + std::to_string(seed) + ".db").code == 0);
    if (test::count_in(box.path("probe" + std::to_string(seed) + ".db"),
                       "SELECT config_index FROM trials ORDER BY ordinal LIMIT 1") == 0) {
      break;
    }
  }
  REQUIRE(seed < 20);
  write(seed);
  // Killed once the fast trial is stored, while the slow one trains.
  const pid_t pid = box.start("run c.json --db results.db", "log.txt");
  bool stored = false;
  for (int i = 0; i < 1000 && !stored; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stored = box.has_tables() &&
             box.count("SELECT count(*) FROM trials WHERE status = 'ok' AND config_index = 0") == 1;
  }
  REQUIRE(stored);
  ::kill(pid, SIGKILL);
  Sandbox::wait(pid);
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok' AND config_index = 1") == 0);
  const auto r = box.gpusweep("run c.json --db results.db --resume");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const double best = std::stod(box.text(
      "SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE t.config_index = 0 "
      "AND m.name = 'target_time_s'"));
  CHECK(box.text("SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
                 "t.config_index = 1 AND t.status = 'ok' AND m.name = 'target_capped'") == "1.0");
  const double train =
      std::stod(box.text("SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
                         "t.config_index = 1 AND t.status = 'ok' AND m.name = 'target_train_s'"));
  CHECK(train >= 1.5 * best);
  CHECK(train < 3 * best);
}

TEST_CASE("tune-batch with a target trains every batch size that fits to it, capped, by seed",
          "[integration][target][tune-batch][timing]") {
  Sandbox box;
  // noop learns in steps, whatever the batch: every size reaches quality
  // 0.9 after the same steps (about 55 ms of 200 us steps, by seed), while
  // samples a second grow with the batch. The largest batch has the most
  // samples/s and is the target sweep's baseline.
  const auto r = box.gpusweep(
      "tune-batch noop --db results.db --max 4 --format json --set spin_us=200 --set "
      "learn_steps=300 --set measure.steps_per_block=25 --set "
      "'measure.target={\"value\": 0.9, \"max_s\": 2}'");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  const auto& t = j.at("time_to_target");
  CHECK(t["sweep"] == "tune-batch-noop-target");
  CHECK(t["most_samples_per_s"] == 4);
  // Every size that fit (1, 2, 4 and the verified 3), 6 seeds each. A seed
  // slowed past 1.5x its round's best by the machine is capped (censored):
  // how many is the machine's, so the test asks only that the cap was the
  // only reason (none ran out of max_s).
  // Each seed's first to the target sets the cap, so at least one a seed
  // reached it.
  std::set<int64_t> sizes;
  int reached = 0;
  for (const auto& b : t["batches"]) {
    sizes.insert(b["batch_size"].get<int64_t>());
    CHECK(b["time_to_target"]["seeds"] == 6);
    reached += b["time_to_target"]["reached"].get<int>();
    // A median where most seeds reached it (null when most were capped):
    // its size is the machine's, so only its presence and sign are asked.
    if (b["time_to_target"]["reached"].get<int>() > 3) {
      CHECK(b["time_to_target"]["median_s"].get<double>() > 0);
    }
    // Every size but the baseline is compared with it, paired by seed (the
    // verdict itself rests on measured times, which this test leaves alone:
    // the steps below are what the sizes share).
    if (!b["most_samples_per_s"].get<bool>()) {
      CHECK((!b["time_ratio"]["ratio"].is_number() || b["time_ratio"]["ratio"].get<double>() > 0));
      CHECK_FALSE(b["time_ratio"]["verdict"].get<std::string>().empty());
    }
  }
  CHECK(reached >= 6);
  // The same steps to the target, seed by seed, whatever the batch, for
  // those that reached it: what makes the sizes' times alike.
  CHECK(box.count("SELECT count(*) FROM (SELECT t.repeat, count(DISTINCT m.value) AS n FROM "
                  "metrics m JOIN trials t ON t.id = m.trial_id JOIN sweeps s ON s.id = "
                  "t.sweep_id WHERE s.name = 'tune-batch-noop-target' AND m.name = "
                  "'target_steps' AND t.id IN (SELECT trial_id FROM metrics WHERE name = "
                  "'target_censored' AND value = 0) GROUP BY t.repeat) WHERE n = 1") == 6);
  CHECK(sizes == std::set<int64_t>{1, 2, 3, 4});
  CHECK(t["first_to_target"].is_number_integer());
  CHECK(t["selection_data"] == true);  // picked on the seeds that compare it
  CHECK(box.count("SELECT count(*) FROM trials t JOIN sweeps s ON s.id = t.sweep_id JOIN metrics "
                  "m ON m.trial_id = t.id WHERE s.name = 'tune-batch-noop-target' AND m.name = "
                  "'target_censored' AND m.value = 1 AND t.id NOT IN (SELECT trial_id FROM "
                  "metrics WHERE name = 'target_capped' AND value = 1)") == 0);
  // Stored as a sweep of its own: seeds paired by repeat, capping on.
  CHECK(box.count("SELECT count(*) FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE "
                  "s.name = 'tune-batch-noop-target' AND t.status = 'ok'") == 24);
  CHECK(box.text("SELECT json_extract(spec_json, '$.measure.target.cap') FROM sweeps WHERE "
                 "name = 'tune-batch-noop-target'") == "1.5");
  CHECK(box.text("SELECT json_extract(spec_json, '$.baseline.batch_size') FROM sweeps WHERE "
                 "name = 'tune-batch-noop-target'") == "4");
  // The table says which batch was first and how it compares.
  const auto table = box.gpusweep(
      "tune-batch noop --db other.db --max 2 --set spin_us=200 --set learn_steps=300 --set "
      "measure.steps_per_block=25 --set measure.repeats=2 --set "
      "'measure.target={\"value\": 0.9, \"max_s\": 2, \"cap\": false}'");
  INFO(table.output);
  REQUIRE(table.code == 0);
  CHECK_THAT(table.output, Contains("most samples/s:       batch 2") &&
                               Contains("first to the target:  batch") &&
                               Contains("selection data"));
  CHECK(test::count_in(box.path("other.db"),
                       "SELECT count(*) FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE "
                       "s.name = 'tune-batch-noop-target'") == 4);
  CHECK(test::text_in(box.path("other.db"),
                      "SELECT coalesce(json_extract(spec_json, '$.measure.target.cap'), 0) FROM "
                      "sweeps WHERE name = 'tune-batch-noop-target'") == "0");
}

TEST_CASE("compare on a target run: times to target paired by seed, the inversion flag shown",
          "[integration][target][compare]") {
  Sandbox box;
  // spin_us 150 is 1.33x the steps/s of 200; learn_steps 600 needs twice
  // the steps of 300 from the same seed. So config 4 (600, 150) is faster
  // per step and about 1.5x slower to the target: an inversion.
  box.write("i.json", R"({"name": "inversion", "workload": "noop",
    "grid": {"spin_us": [200, 150], "learn_steps": [300, 600]},
    "baseline": {"spin_us": 200, "learn_steps": 300},
    "claims": [{"claim": "twice the learning takes about twice the time", "change":
                {"learn_steps": 600}, "metric": "time_to_target", "expected": [1.2, 4]}],
    "measure": {"target": {"value": 0.9, "max_s": 0.5}, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 6, "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run i.json --db results.db").code == 0);
  const auto r = box.gpusweep("compare --db results.db --target --format json");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto rows = nlohmann::json::parse(r.output);
  REQUIRE(rows.size() == 4);
  std::map<std::pair<double, double>, nlohmann::json> by;
  for (const auto& row : rows) by[{row["spin_us"], row["learn_steps"]}] = row;
  // What this test checks is the pipeline, not measured speeds (the
  // verdicts rest on times this machine's load stretches: they are
  // compare_test's, on synthetic times, and bench/cases/time_to_target.json's):
  // every config's six seeds reached, paired with the baseline's, with a
  // verdict of compare's; twice the learning took twice the steps, seed by
  // seed; the inversion flag is what the table and the report show.
  const std::set<std::string> verdicts = {"faster to target", "slower to target",
                                          "negligible difference", "no significant difference",
                                          "no interval"};
  bool any_inversion = false;
  for (const auto& [key, row] : by) {
    INFO("spin_us " << key.first << ", learn_steps " << key.second);
    CHECK(row["reached"] == 6);
    CHECK(row["median_s"].get<double>() > 0);
    if (key == std::make_pair(200.0, 300.0)) {
      CHECK(row["verdict"] == "baseline");
      continue;
    }
    CHECK(verdicts.count(row["verdict"].get<std::string>()) == 1);
    CHECK(row["time_ratio"].get<double>() > 0);
    any_inversion = any_inversion || row["inversion"].get<bool>();
  }
  const auto steps_ratio = std::stod(box.text(
      "SELECT avg(b.value / a.value) FROM metrics a JOIN trials ta ON ta.id = a.trial_id, "
      "metrics b JOIN trials tb ON tb.id = b.trial_id WHERE a.name = 'target_steps' AND "
      "b.name = 'target_steps' AND ta.repeat = tb.repeat AND "
      "json_extract(ta.config_json, '$.spin_us') = json_extract(tb.config_json, '$.spin_us') AND "
      "json_extract(ta.config_json, '$.learn_steps') = 300 AND "
      "json_extract(tb.config_json, '$.learn_steps') = 600"));
  CHECK(steps_ratio == Approx(2.0).epsilon(0.15));
  // The table shows it under compare's own; a run without a target refuses --target.
  const std::string table = box.gpusweep("compare --db results.db").output;
  CHECK_THAT(table, Contains("time to target"));
  CHECK((table.find("INVERSION") != std::string::npos) == any_inversion);
  box.write("p.json", R"({"name": "plain", "workload": "noop", "grid": {"spin_us": [0, 1]},
    "measure": {"repeats": 2, "warmup_steps": 0, "steps_per_block": 10, "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run p.json --db results.db").code == 0);
  const auto plain = box.gpusweep("compare plain --db results.db --target");
  CHECK(plain.code == 2);
  CHECK_THAT(plain.output, Contains("no measure.target"));
  // A run whose seeds repeat one seed says so: its intervals cover the machine's noise only.
  CHECK_THAT(table, !Contains("vary_seed is false"));
  box.write("v.json", R"({"name": "one_seed", "workload": "noop",
    "grid": {"learn_steps": [300, 600]},
    "measure": {"target": {"value": 0.9, "max_s": 2}, "vary_seed": false, "warmup_steps": 0,
                "steps_per_block": 10, "repeats": 2, "min_block_s": 0}})");
  REQUIRE(box.gpusweep("run v.json --db results.db").code == 0);
  CHECK_THAT(box.gpusweep("compare one_seed --db results.db").output,
             Contains("vary_seed is false"));
  CHECK_THAT(box.gpusweep("compare one_seed --db results.db --target").output,
             Contains("vary_seed is false"));

  // A claim on time_to_target, judged on the paired ratio (its verdict, on
  // measured times, is claims_test's).
  const auto claims = box.gpusweep("compare inversion --db results.db --claims --format json");
  INFO(claims.output);
  REQUIRE(claims.code == 0);
  const auto claim = nlohmann::json::parse(claims.output).at(0);
  CHECK(std::set<std::string>{"confirmed", "overlaps", "refuted", "inconclusive"}.count(
            claim["verdict"].get<std::string>()) == 1);
  CHECK(claim["ratio"].get<double>() > 0);

  // best on a target run: the first to the target, the config with the
  // lowest median time as compare gives them, not the most steps a second.
  const auto best = box.gpusweep("best inversion --db results.db --format json");
  INFO(best.output);
  REQUIRE(best.code == 0);
  const auto b = nlohmann::json::parse(best.output);
  CHECK(b["objective"] == "time_to_target");
  const auto first = std::min_element(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
    return x["median_s"].template get<double>() < y["median_s"].template get<double>();
  });
  CHECK(b["best"]["settings"]["spin_us"] == (*first)["spin_us"]);
  CHECK(b["best"]["settings"]["learn_steps"] == (*first)["learn_steps"]);
  CHECK(b["best"]["metrics"]["time_to_target"].get<double>() > 0);
  CHECK(box.gpusweep("best plain --db results.db --objective time_to_target").code == 2);

  // The report: a curve per trial against training time, the target's
  // line, and the table with the inversion.
  REQUIRE(box.gpusweep("report --sweep inversion --db results.db --html r.html").code == 0);
  const std::string html = box.read("r.html");
  CHECK_THAT(html, Contains("<h2>Time to target</h2>") &&
                       Contains("data-chart=\"target_curves\"") && Contains("<title>target 0.9") &&
                       Contains("blocks of 10 steps until the target"));
  CHECK((html.find("INVERSION") != std::string::npos) == any_inversion);
  size_t curves = 0;
  for (size_t at = html.find("<polyline class=\"curve\""); at != std::string::npos;
       at = html.find("<polyline class=\"curve\"", at + 1)) {
    ++curves;
  }
  CHECK(curves == 24);  // 4 configs x 6 seeds
}

// tune on time to target, end to end: noop learns in learn_steps (by seed,
// 20% cv); 300 steps of 200 us reach 0.9 in about 55 ms, 2400 in eight
// times that. Capped by default at 1.5x each round's best, the slow configs
// are censored in nearly every round, known slower, and dropped once a
// sign test can reject (six rounds); the winner is confirmed over six fresh
// rounds against the baseline with the sign test's interval.
TEST_CASE("tune races to a target: capped trials are evidence, the fastest learner wins",
          "[integration][target][tune]") {
  Sandbox box;
  box.write("t.json", R"({"name": "race", "workload": "noop",
    "base": {"spin_us": 200},
    "grid": {"learn_steps": [2400, 1200, 300]},
    "measure": {"target": {"value": 0.9, "max_s": 1}, "warmup_steps": 0,
                "steps_per_block": 10, "min_block_s": 0}})");
  const auto r = box.gpusweep("tune t.json --db results.db --budget 3m --format json");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("objective time_to_target"));
  const auto out = nlohmann::json::parse(r.output.substr(r.output.find("{\n")));
  CHECK(out["objective"] == "time_to_target");
  CHECK(out["winner"]["config"] == 3);
  // Capped by default, and a capped trial is evidence: the slowest is
  // dropped by the sign test, not written off as failed.
  CHECK(box.text("SELECT json_extract(spec_json, '$.measure.target.cap') FROM sweeps") == "1.5");
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'target_capped' AND value = 1") > 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status NOT IN ('ok', 'pending')") == 0);
  bool dropped_by_sign = false;
  for (const auto& e : out["events"]) {
    if (e["event"] == "dropped") {
      dropped_by_sign = true;
      CHECK(e["round"].get<int>() >= 5);  // no drop before six paired rounds
      CHECK_THAT(e["reason"].get<std::string>(), Contains("sign test"));
    }
  }
  CHECK(dropped_by_sign);
  // Six confirmation rounds at least; the winner 8x as fast to the target
  // as the baseline (2400 steps): six seeds' interval is wide, above 1.
  CHECK(box.count("SELECT count(DISTINCT repeat) FROM trials WHERE repeat >= 1000000") >= 6);
  const auto& vs = out["winner"]["vs_baseline"];
  REQUIRE(vs.is_object());
  CHECK(vs["low"].get<double>() > 1);
  CHECK(vs["ratio"].get<double>() > 3);
  CHECK(vs["repeats"].get<int>() >= 6);
  // compare on the tune run reads its confirmation rounds, times to target.
  // Its rows: the confirmed configs, six or more seeds each, none for the
  // racing rounds' configs that were not confirmed.
  const auto c = box.gpusweep("compare --db results.db --target --format json");
  INFO(c.output);
  REQUIRE(c.code == 0);
  const auto rows = nlohmann::json::parse(c.output);
  CHECK(rows.size() >= 2);
  for (const auto& row : rows) CHECK(row["trials"].get<int>() >= 6);
}
