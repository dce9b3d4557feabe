// The timeseries plugin through the real binary, on tiny models: quality
// recorded next to the seasonal-naive reference and falling from
// initialisation, the fused LSTM computing what torch::nn::LSTM computes,
// and the common settings (channels_last skipped with the reason,
// grad_accum, sync_every) checked with SQL.
#include "harness.hpp"

#include <cmath>
#include <string>

using Catch::Matchers::Contains;
using gpusweep::test::config_is;
using gpusweep::test::kOnlyTrial;
using gpusweep::test::Sandbox;

TEST_CASE("timeseries fused and aten LSTMs train the same model", "[integration][torch]") {
  Sandbox box;
  box.write("t.json", R"({"name": "tiny", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 16, "num_layers": 2, "seq_len": 12,
             "batch_size": 32},
    "grid": {"lstm_impl": ["aten", "fused"]},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 4, "blocks": 5, "timeout_s": 120, "min_block_s": 0},
    "baseline": {"lstm_impl": "aten"}})");
  const auto r = box.gpusweep("run t.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE unit = 'sequences' AND "
                  "quality_metric = 'val_mae' AND quality > 0 AND quality_reference > 0.1 AND "
                  "throughput_median > 0 AND samples_per_step = 32 AND peak_memory_bytes > 0") ==
        2);
  // Same seed, same parameters, same data: 22 Adam steps later both still
  // agree to float rounding, so the hand-written backward is torch's.
  const double aten = metric(box, "val_mae", config_is("lstm_impl", "'aten'"));
  const double fused = metric(box, "val_mae", config_is("lstm_impl", "'fused'"));
  INFO("val_mae aten " << aten << ", fused " << fused);
  CHECK(std::abs(aten - fused) < 1e-4);
  CHECK(metric(box, "initial_val_mae", config_is("lstm_impl", "'aten'")) ==
        Approx(metric(box, "initial_val_mae", config_is("lstm_impl", "'fused'"))).epsilon(1e-6));
}

TEST_CASE("timeseries val_mae falls from its initial value below seasonal naive",
          "[integration][torch]") {
  Sandbox box;
  box.write("l.json", R"({"name": "learn", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 16, "num_layers": 1, "seq_len": 30,
             "batch_size": 64},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 60, "blocks": 5, "timeout_s": 120}})");
  const auto r = box.gpusweep("run l.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const double initial = metric(box, "initial_val_mae", kOnlyTrial);
  const double final_mae = metric(box, "val_mae", kOnlyTrial);
  const double naive = metric(box, "seasonal_naive_mae", kOnlyTrial);
  INFO("val_mae " << initial << " at init, " << final_mae << " after 300 steps; seasonal naive "
                  << naive);
  CHECK(final_mae < 0.6 * initial);
  CHECK(final_mae < naive);
}

TEST_CASE("timeseries skips channels_last with the reason", "[integration][torch]") {
  Sandbox box;
  box.write("c.json", R"({"name": "cl", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 8, "num_layers": 1, "seq_len": 8,
             "batch_size": 16},
    "grid": {"channels_last": [false, true]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run c.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.text(
            "SELECT status FROM trials WHERE json_extract(config_json, '$.channels_last') = 0") ==
        "ok");
  CHECK(box.text(
            "SELECT status FROM trials WHERE json_extract(config_json, '$.channels_last') = 1") ==
        "skipped");
  CHECK_THAT(
      box.text("SELECT error FROM trials WHERE json_extract(config_json, '$.channels_last') = 1"),
      Contains("the LSTM has no 4-D tensors"));
}

TEST_CASE("timeseries grad_accum doubles the sequences per step and sync_every thins loss reads",
          "[integration][torch]") {
  Sandbox box;
  box.write("g.json", R"({"name": "accum", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 8, "num_layers": 1, "seq_len": 8,
             "batch_size": 16},
    "grid": {"grad_accum": [1, 2], "sync_every": [1, 10]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 4, "blocks": 5, "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run g.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  // 20 steps, each on grad_accum batches taken from the input pipeline.
  const std::string one_batch = " AND " + config_is("grad_accum", "1");
  const std::string two_batches = " AND " + config_is("grad_accum", "2");
  CHECK(metric(box, "input_batches", config_is("sync_every", "1") + one_batch) == 20);
  CHECK(metric(box, "input_batches", config_is("sync_every", "1") + two_batches) == 40);
  // A loss read per step, or one every 10 steps: the same training either
  // way, so the last loss read (step 20) is the same value.
  CHECK(metric(box, "loss_reads", config_is("sync_every", "1") + one_batch) == 20);
  CHECK(metric(box, "loss_reads", config_is("sync_every", "10") + one_batch) == 2);
  CHECK(metric(box, "last_loss", config_is("sync_every", "10") + one_batch) ==
        Approx(metric(box, "last_loss", config_is("sync_every", "1") + one_batch)).epsilon(1e-5));
}

TEST_CASE(
    "a trial forked from the fork server runs LibTorch's thread pool and trains as a fresh "
    "process does",
    "[integration][torch][fork]") {
  Sandbox box;
  box.write("f.json", R"({"name": "fork", "workload": "timeseries",
    "base": {"device": "cpu", "hidden_size": 64, "num_layers": 1, "seq_len": 24,
             "batch_size": 256, "seed": 4},
    "grid": {"threads": [1, 2]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 1, "blocks": 5, "min_block_s": 0}})");
  const auto forked = box.gpusweep("run f.json --db results.db");
  INFO(forked.output);
  REQUIRE(forked.code == 0);
  const auto fresh = box.gpusweep("run f.json --db fresh.db --fresh-workers");
  INFO(fresh.output);
  REQUIRE(fresh.code == 0);
  // threads=2 left its OpenMP team in the forked process: more threads
  // than the threads=1 trial, whose pool never grew.
  CHECK(metric(box, "os_threads", config_is("threads", "2")) >
        metric(box, "os_threads", config_is("threads", "1")));
  // The same seeded training either way: the fork starts from the state of
  // a process that only loaded the plugin.
  for (const char* threads : {"1", "2"}) {
    INFO("threads " << threads);
    const double a = metric(box, "last_loss", config_is("threads", threads));
    const double b = std::stod(gpusweep::test::text_in(
        box.path("fresh.db"),
        "SELECT CAST(m.value AS TEXT) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
        "m.name = 'last_loss' AND " +
            config_is("threads", threads)));
    CHECK(std::abs(a - b) <= 1e-5 * std::abs(b));
  }
}

TEST_CASE("diagnose --format json splits the step into phases and suggests a sweep that runs",
          "[integration][torch]") {
  Sandbox box;
  const auto r = gpusweep::test::run_shell(
      "cd '" + box.path("") + "' && '" + GPUSWEEP_BIN +
      "' diagnose timeseries --matmul-seconds 0.1 --db results.db --sweep-out s.json "
      "--format json 2>/dev/null");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(r.output);
  CHECK(doc.at("device") == "cpu");
  double sum = 0;
  for (const auto& [phase, s] : doc.at("phases_s_per_step").items()) sum += s.get<double>();
  CHECK(sum == Approx(doc.at("step_time_s").get<double>()).epsilon(0.01));
  const std::string bottleneck = doc.at("bottleneck");
  CHECK_THAT(bottleneck, Contains("-bound"));
  // The suggested sweep is the file written, and `run` accepts it as it is.
  REQUIRE(doc.at("suggested_sweep").is_object());
  CHECK(nlohmann::json::parse(box.read("s.json")) == doc.at("suggested_sweep"));
  const auto plan = box.gpusweep("run s.json --dry-run --db results.db");
  INFO(plan.output);
  CHECK(plan.code == 0);
}

// Repeats train from their own seeds (measure.vary_seed), so their quality
// spreads as seeds do; with vary_seed false they are the same run thrice.
TEST_CASE("each repeat trains from its own seed unless vary_seed is false",
          "[integration][torch]") {
  Sandbox box;
  const std::string sweep = R"({"name": "seeds", "workload": "timeseries",
    "base": {"device": "cpu", "threads": 1, "hidden_size": 16, "num_layers": 1, "seq_len": 12,
             "batch_size": 32, "seed": 5},
    "measure": {"repeats": 3, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0)";
  box.write("vary.json", sweep + "}}");
  box.write("same.json", sweep + R"(, "vary_seed": false}})");
  REQUIRE(box.gpusweep("run vary.json --db vary.db").code == 0);
  REQUIRE(box.gpusweep("run same.json --db same.db").code == 0);
  const auto distinct = [&](const std::string& db) {
    return gpusweep::test::count_in(box.path(db),
                                    "SELECT count(DISTINCT quality) FROM trial_summary");
  };
  CHECK(distinct("vary.db") == 3);
  CHECK(distinct("same.db") == 1);
  // Repeat 0 keeps the config's seed; the others record theirs.
  CHECK(gpusweep::test::count_in(box.path("vary.db"),
                                 "SELECT count(DISTINCT m.value) FROM metrics m JOIN trials t ON "
                                 "t.id = m.trial_id WHERE m.name = 'seed' AND t.repeat > 0 AND "
                                 "m.value <> 5") == 2);
  CHECK(gpusweep::test::count_in(box.path("same.db"),
                                 "SELECT count(*) FROM metrics WHERE name = 'seed'") == 0);
}

TEST_CASE("timeseries sizes its blocks by time under measure.block_s", "[integration][torch]") {
  gpusweep::test::check_blocks_sized_by_time(
      "timeseries",
      R"({"device": "cpu", "threads": 1, "hidden_size": 16, "num_layers": 1, "seq_len": 12})");
}
