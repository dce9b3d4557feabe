// The marl plugin through the real binary: tiny COMA runs checked with SQL
// (units, samples per step, quality next to the random policy, the update
// schedule) and the settings it has nothing to apply to skipped with reasons.
#include "harness.hpp"

using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;

TEST_CASE("marl runs tiny COMA configs and records coverage next to a random policy",
          "[integration][torch]") {
  Sandbox box;
  box.write("m.json", R"({"name": "tiny", "workload": "marl",
    "base": {"device": "cpu", "threads": 1, "batch_size": 8, "n_agents": 2, "budget": 4,
             "batch_number": 2, "data_passes": 3},
    "grid": {"critic_obs": [false, true], "precision": ["fp32", "bf16"]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "timeout_s": 120},
    "baseline": {"critic_obs": false, "precision": "fp32"}})");
  const auto r = box.gpusweep("run m.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 4);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE unit = 'agent_steps' AND "
                  "secondary_unit = 'episodes' AND throughput_median > 0 AND "
                  "quality IS NOT NULL AND quality_reference > 0 AND "
                  "quality_higher_is_better = 1") == 4);
  // The agent steps a trial reports are the moves its environment made: 11
  // steps (1 warmup + 5 blocks of 2), each 8 episodes of 4 moves by 2 agents.
  CHECK(box.count("SELECT count(*) FROM trial_summary m WHERE m.samples_per_step * 11 = "
                  "(SELECT s.value FROM metrics s WHERE s.trial_id = m.trial_id AND s.kind = "
                  "'stat' AND s.name = 'agent_moves' ORDER BY s.at_step DESC LIMIT 1) AND "
                  "m.samples_per_step = 64") == 4);
  // 11 steps x 2 minibatches x 3 passes critic updates, one actor update per step.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND "
                  "name = 'critic_updates' AND value = 66") == 4);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND "
                  "name = 'actor_updates' AND value = 11") == 4);
  // Coverage counts cells of the 16x16 grid: at least the two starting
  // neighbourhoods' worth of one agent, at most the grid.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name IN ('mean_coverage', "
                  "'random_coverage') AND (value < 4 OR value > 256)") == 0);
}

TEST_CASE("marl is deterministic for a fixed seed", "[integration][torch]") {
  Sandbox box;
  box.write("d.json", R"({"name": "det", "workload": "marl",
    "base": {"device": "cpu", "threads": 1, "batch_size": 8, "budget": 5, "seed": 3},
    "measure": {"warmup_steps": 0, "steps_per_block": 2, "blocks": 5, "repeats": 2,
                "timeout_s": 120, "vary_seed": false}})");
  const auto r = box.gpusweep("run d.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  // Both repeats end with the same critic loss and the same greedy coverage.
  CHECK(box.count("SELECT count(DISTINCT value) FROM metrics WHERE kind = 'stat' AND "
                  "name = 'last_loss'") == 1);
  CHECK(box.count("SELECT count(DISTINCT value) FROM metrics WHERE kind = 'eval' AND "
                  "name = 'mean_coverage'") == 1);
}

TEST_CASE("marl skips the settings it has nothing to apply to, with the reason",
          "[integration][torch]") {
  Sandbox box;
  box.write("s.json", R"({"name": "skips", "workload": "marl",
    "base": {"device": "cpu", "threads": 1, "batch_size": 4, "budget": 2},
    "grid": {"channels_last": [false, true]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 5,
                "min_block_s": 0}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::string where = "WHERE json_extract(config_json, '$.channels_last') = ";
  CHECK(box.text("SELECT status FROM trials " + where + "1") == "skipped");
  CHECK_THAT(box.text("SELECT error FROM trials " + where + "1"),
             Contains("channels_last") && Contains("no 4-D tensors"));
  CHECK(box.text("SELECT status FROM trials " + where + "0") == "ok");

  box.write("g.json", R"({"name": "more", "workload": "marl",
    "base": {"device": "cpu", "threads": 1, "batch_size": 4, "budget": 2},
    "grid": {"grad_accum": [1, 2], "precision": ["fp32", "fp16"]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 5}})");
  const auto g = box.gpusweep("run g.json --db results.db");
  INFO(g.output);
  REQUIRE(g.code == 0);
  const std::string more =
      "FROM trials t JOIN sweeps s ON s.id = t.sweep_id WHERE s.name = 'more' AND ";
  CHECK(box.count("SELECT count(*) " + more + "t.status = 'skipped'") == 3);
  CHECK_THAT(box.text("SELECT t.error " + more +
                      "json_extract(t.config_json, '$.grad_accum') = 2 AND "
                      "json_extract(t.config_json, '$.precision') = 'fp32'"),
             Contains("grad_accum=2 does not apply"));
}

TEST_CASE("diagnose times marl's forward and counts its FLOPs", "[integration][torch]") {
  Sandbox box;
  const auto doc = gpusweep::test::gpusweep_json(
      box,
      "diagnose marl --set device=cpu --set threads=1 --set batch_size=4 --set budget=4 --set "
      "data_passes=1 --set batch_number=2 --set measure.warmup_steps=2 --set "
      "measure.steps_per_block=2 --matmul-seconds 0 --db results.db --format json");
  for (const char* phase : {"forward", "backward", "optimizer"}) {
    INFO(phase);
    CHECK(doc.at("phases_s_per_step").at(phase).get<double>() > 0);
  }
  // 4 episodes of 4 moves of 4 agents: the critic (256-wide, 0.72 MFLOP a
  // transition) forward and backward over 16 transitions, its targets and
  // the actor update, the rollout's actor (42 kFLOP a row): about 65 MFLOP.
  const double flops = doc.at("flops_per_step").get<double>();
  CHECK(flops > 3e7);
  CHECK(flops < 1.3e8);
}

TEST_CASE("marl sizes its blocks by time under measure.block_s", "[integration][torch]") {
  gpusweep::test::check_blocks_sized_by_time(
      "marl",
      R"({"device": "cpu", "threads": 1, "batch_size": 4, "budget": 4, "data_passes": 1, "batch_number": 2})");
}
