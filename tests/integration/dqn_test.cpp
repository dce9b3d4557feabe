// The dqn plugin through the real binary: tiny runs of every knob checked
// with SQL, settings that cannot apply on CPU skipped with the reason, and
// the learning check of experiments/dqn_learning.json.
#include "harness.hpp"

using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;

TEST_CASE("dqn runs every knob combination on tiny steps", "[integration][torch]") {
  Sandbox box;
  box.write("d.json", R"({"name": "tiny", "workload": "dqn",
    "base": {"device": "cpu", "threads": 1, "num_envs": 2, "hidden": 32},
    "grid": {"replay_on_device": [false, true], "target_sync": ["roundtrip", "inplace"],
             "double_dqn": [false, true]},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 5, "blocks": 5, "timeout_s": 120,
                "eval_every_blocks": 1, "min_block_s": 0},
    "baseline": {"replay_on_device": false, "target_sync": "roundtrip", "double_dqn": false}})");
  const auto r = box.gpusweep("run d.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 8);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE unit = 'updates' AND "
                  "secondary_unit = 'env_steps' AND throughput_median > 0 AND "
                  "peak_memory_bytes > 0 AND quality IS NOT NULL AND quality_reference > 0") == 8);
  // The env steps a block reports are the ones the environments took: the
  // environments' own count (evaluated after every block) moves by each
  // block's secondary_samples, 2 envs x 5 updates.
  CHECK(box.count("SELECT count(*) FROM blocks WHERE secondary_samples = 10") == 8 * 5);
  CHECK(box.count("SELECT count(*) FROM (SELECT value - lag(value) OVER (PARTITION BY trial_id "
                  "ORDER BY at_step) AS moved FROM metrics WHERE kind = 'eval' AND "
                  "name = 'env_steps') WHERE moved = 10") == 8 * 4);
  CHECK(box.text("SELECT DISTINCT torch_version FROM environments") == GPUSWEEP_TORCH_VERSION);
  CHECK(box.count("SELECT count(*) FROM environments WHERE threads = 1") >= 1);
  // The greedy return's standard error over the evaluation's episodes reaches
  // compare, whose quality check is then an interval (one repeat each).
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND name = 'quality_se' "
                  "AND value >= 0") == 8);
  const auto c = box.gpusweep("compare --db results.db --format json");
  REQUIRE(c.code == 0);
  int with_interval = 0;
  for (const auto& row : nlohmann::json::parse(c.output)) {
    if (row.value("baseline", false)) continue;
    CHECK_FALSE(row["quality_verdict"].is_null());
    if (row["quality_low"].is_number() && row["quality_high"].is_number() &&
        row["quality_low"].get<double>() <= row["quality_change"].get<double>() &&
        row["quality_change"].get<double>() <= row["quality_high"].get<double>()) {
      ++with_interval;
    }
  }
  CHECK(with_interval == 7);
}

TEST_CASE("settings that cannot apply on this machine are skipped with the reason",
          "[integration][torch]") {
  Sandbox box;
  box.write("s.json", R"({"name": "skips", "workload": "dqn",
    "base": {"device": "cpu"},
    "grid": {"precision": ["fp32", "fp16", "bf16"]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 3, "blocks": 5, "min_block_s": 0}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.text(
            "SELECT status FROM trials WHERE json_extract(config_json, '$.precision') = 'fp16'") ==
        "skipped");
  CHECK_THAT(
      box.text("SELECT error FROM trials WHERE json_extract(config_json, '$.precision') = 'fp16'"),
      Contains("needs a CUDA device"));
  CHECK(box.text(
            "SELECT status FROM trials WHERE json_extract(config_json, '$.precision') = 'bf16'") ==
        "ok");
  // Without a CUDA build or device, device=cuda is skipped too, never a crash.
  box.write("c.json", R"({"name": "cuda", "workload": "dqn", "base": {"device": "cuda"},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 3, "blocks": 5, "min_block_s": 0}})");
  const auto c = box.gpusweep("run c.json --db results.db");
  CHECK(c.code == 0);
  CHECK(box.text("SELECT t.status FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = "
                 "'cuda'") == "skipped");
}

TEST_CASE("dqn learns CartPole: best greedy return of at least 150 in 30000 steps",
          "[integration][torch][slow]") {
  Sandbox box;
  const auto r = box.gpusweep(std::string("run '") + GPUSWEEP_SOURCE_DIR +
                              "/experiments/dqn_learning.json' --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'eval' AND name = 'mean_return'") ==
        15);
  const auto best = box.count(
      "SELECT CAST(max(value) AS INTEGER) FROM metrics WHERE kind = 'eval' AND name = "
      "'mean_return'");
  const auto random = box.count(
      "SELECT CAST(max(value) AS INTEGER) FROM metrics WHERE name = 'random_policy_return'");
  INFO("best greedy return " << best << ", random policy " << random);
  CHECK(best >= 150);
  CHECK(random < 40);
}

TEST_CASE("dqn sizes its blocks by time under measure.block_s", "[integration][torch]") {
  gpusweep::test::check_blocks_sized_by_time("dqn", R"({"device": "cpu", "threads": 1})");
}
