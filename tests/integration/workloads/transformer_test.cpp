// The transformer plugin through the real binary: tiny runs checked with SQL,
// gradient accumulation training as the batch it adds up to, resuming from a checkpoint giving
// exactly the uninterrupted run's losses, and the skipped settings.
#include "harness.hpp"

#include <cmath>
#include <string>

using Catch::Matchers::Contains;
using gpusweep::test::config_is;
using gpusweep::test::metric;
using gpusweep::test::Sandbox;

namespace {

// A tiny model: one run of a few steps takes about a second.
const char* const kTinyBase =
    R"("device": "cpu", "threads": 1, "batch_size": 4, "d_model": 32, "n_layers": 1,
       "n_heads": 2, "seq_len": 16)";

}  // namespace

TEST_CASE("transformer runs tiny configs and grad_accum multiplies the samples per step",
          "[integration][torch]") {
  Sandbox box;
  box.write("t.json", std::string(R"({"name": "tiny", "workload": "transformer", "base": {)") +
                          kTinyBase + R"(},
    "grid": {"grad_accum": [1, 4], "precision": ["fp32", "bf16"]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "timeout_s": 120, "min_block_s": 0},
    "baseline": {"grad_accum": 1, "precision": "fp32"}})");
  const auto r = box.gpusweep("run t.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 4);
  // Quality is a loss next to the chain's entropy rate, both in nats below
  // ln 64 = 4.16 plus what a fresh model adds.
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE unit = 'tokens' AND "
                  "secondary_unit = 'sequences' AND throughput_median > 0 AND "
                  "quality > quality_reference AND quality < 5 AND quality_reference > 0.5 AND "
                  "quality_higher_is_better = 0") == 4);
  // Eleven optimiser steps either way; four times the micro-batches with grad_accum 4.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND "
                  "name = 'optimizer_steps' AND value = 11") == 4);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND "
                  "name = 'micro_batches' AND value = 44") == 2);
}

TEST_CASE("transformer resumed at step k gives the uninterrupted run's losses",
          "[integration][torch]") {
  Sandbox box;
  const std::string checkpoint = box.path("run.ckpt");
  const std::string measure = R"("measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 1,
                                             "blocks": 5, "timeout_s": 120})";
  // A: ten steps straight through. B: five steps saving a checkpoint, then a
  // second trial resuming from it for five more.
  box.write("a.json", std::string(R"({"name": "a", "workload": "transformer", "base": {)") +
                          kTinyBase + R"(, "sync_every": 1, "seed": 7},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 10, "timeout_s": 120}})");
  box.write("b1.json", std::string(R"({"name": "b1", "workload": "transformer", "base": {)") +
                           kTinyBase + R"(, "sync_every": 1, "seed": 7, "checkpoint_path": ")" +
                           checkpoint + R"(", "checkpoint_every": 5}, )" + measure + "}");
  box.write("b2.json", std::string(R"({"name": "b2", "workload": "transformer", "base": {)") +
                           kTinyBase + R"(, "sync_every": 1, "seed": 7, "checkpoint_path": ")" +
                           checkpoint + R"(", "resume": true}, )" + measure + "}");
  for (const char* sweep : {"a", "b1", "b2"}) {
    const auto r = box.gpusweep(std::string("run ") + sweep + ".json --db results.db");
    INFO(sweep << ": " << r.output);
    REQUIRE(r.code == 0);
  }
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 3);

  // The value of one final metric of sweep `name`.
  auto final_metric = [](const std::string& sweep, const std::string& kind,
                         const std::string& name) {
    return "(SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN sweeps s "
           "ON s.id = t.sweep_id WHERE s.name = '" +
           sweep + "' AND m.kind = '" + kind + "' AND m.name = '" + name +
           "' ORDER BY m.at_step DESC LIMIT 1)";
  };
  CHECK(box.count("SELECT " + final_metric("b1", "stat", "checkpoints_saved")) == 1);
  CHECK(box.count("SELECT " + final_metric("b2", "stat", "start_step")) == 5);
  CHECK(box.count("SELECT " + final_metric("b2", "stat", "step")) == 10);
  // The resumed run starts where the first half stopped...
  CHECK(box.count("SELECT " + final_metric("b1", "eval", "val_loss") + " = " +
                  final_metric("b2", "eval", "start_val_loss")) == 1);
  // ...and ends exactly where the uninterrupted run does: the last step's
  // training loss and the validation loss after it.
  CHECK(box.count("SELECT " + final_metric("a", "stat", "last_loss") + " = " +
                  final_metric("b2", "stat", "last_loss")) == 1);
  CHECK(box.count("SELECT " + final_metric("a", "eval", "val_loss") + " = " +
                  final_metric("b2", "eval", "val_loss")) == 1);
  // And a run that did not resume differs (the check above is not vacuous).
  CHECK(box.count("SELECT " + final_metric("b1", "stat", "last_loss") +
                  " != " + final_metric("b2", "stat", "last_loss")) == 1);

  // A checkpoint of another model shape is refused with both values named.
  box.write("c.json", std::string(R"({"name": "c", "workload": "transformer", "base": {)") +
                          R"("device": "cpu", "threads": 1, "batch_size": 4, "d_model": 64,
                             "n_layers": 1, "n_heads": 2, "seq_len": 16, "seed": 7,
                             "checkpoint_path": ")" +
                          checkpoint + R"(", "resume": true}, )" + measure + "}");
  const auto c = box.gpusweep("run c.json --db results.db");
  INFO(c.output);
  CHECK(c.code == 3);  // its only trial failed, and run's exit status says so
  CHECK_THAT(box.text("SELECT t.error FROM trials t JOIN sweeps s ON s.id = t.sweep_id "
                      "WHERE s.name = 'c'"),
             Contains("saved with d_model=32, this trial has 64"));
}

TEST_CASE("transformer skips channels_last and the input-pipeline settings, with the reason",
          "[integration][torch]") {
  Sandbox box;
  box.write("s.json", std::string(R"({"name": "skips", "workload": "transformer", "base": {)") +
                          kTinyBase + R"(},
    "grid": {"channels_last": [false, true], "loader_workers": [0, 2]},
    "measure": {"repeats": 1, "warmup_steps": 0, "steps_per_block": 1, "blocks": 5, "min_block_s": 0}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 1);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'skipped'") == 3);
  CHECK_THAT(box.text("SELECT error FROM trials WHERE json_extract(config_json, "
                      "'$.channels_last') = 1 AND json_extract(config_json, "
                      "'$.loader_workers') = 0"),
             Contains("channels_last does not apply") && Contains("no 4-D tensors"));
  CHECK_THAT(box.text("SELECT error FROM trials WHERE json_extract(config_json, "
                      "'$.channels_last') = 0 AND json_extract(config_json, "
                      "'$.loader_workers') = 2"),
             Contains("no input pipeline"));
}

TEST_CASE("transformer grad_accum=4 on batches of 4 trains as one batch of 16",
          "[integration][torch]") {
  // The effect gradient accumulation promises: 4 micro-batches of 4 windows
  // give the optimiser the gradient of one batch of 16 (the same windows,
  // drawn in order from the same generator), so the model ends where
  // batch_size 16 takes it, and elsewhere than 11 steps on batches of 4.
  Sandbox box;
  box.write("a.json", R"({"name": "accum", "workload": "transformer",
    "base": {"device": "cpu", "threads": 1, "d_model": 32, "n_layers": 1, "n_heads": 2,
             "seq_len": 16},
    "grid": {"batch_size": [4, 16], "grad_accum": [1, 4]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5, "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run a.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto val_loss = [&](int batch, int accum) {
    return metric(box, "val_loss",
                  config_is("batch_size", std::to_string(batch)) + " AND " +
                      config_is("grad_accum", std::to_string(accum)));
  };
  CHECK(val_loss(4, 4) == Approx(val_loss(16, 1)).epsilon(1e-5));
  CHECK(std::abs(val_loss(4, 4) - val_loss(4, 1)) > 1e-3);
  CHECK(box.count("SELECT count(*) FROM trial_summary m JOIN trials t ON t.id = m.trial_id "
                  "WHERE m.samples_per_step = 16 * 16 AND " +
                  config_is("batch_size", "4") + " AND " + config_is("grad_accum", "4")) == 1);
}

TEST_CASE("transformer's fused attention trains as the written-out one", "[integration][torch]") {
  // The same seed, windows and initial weights; attention either one causal
  // scaled_dot_product_attention kernel (the default) or q k^T + mask,
  // softmax, times v. 12 optimiser steps.
  Sandbox box;
  box.write("a.json", std::string(R"({"name": "attention", "workload": "transformer", "base": {)") +
                          kTinyBase + R"(, "seed": 3},
    "grid": {"attention": ["fused", "explicit"]},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run a.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  const auto value = [&](const char* name, const char* attention) {
    return metric(box, name, config_is("attention", std::string("'") + attention + "'"));
  };
  INFO("val_loss fused " << value("val_loss", "fused") << ", explicit "
                         << value("val_loss", "explicit") << ", untrained "
                         << value("start_val_loss", "fused"));
  CHECK(value("last_loss", "fused") == Approx(value("last_loss", "explicit")).epsilon(1e-4));
  CHECK(value("val_loss", "fused") == Approx(value("val_loss", "explicit")).epsilon(1e-4));
  // 12 steps moved the loss by far more than the tolerance.
  CHECK(std::abs(value("val_loss", "fused") - value("start_val_loss", "fused")) > 1e-2);
  // Each ran its own kernels: they sum in another order, so the losses
  // differ in their last bits (an ignored knob would give the same bits).
  // One of the two may round to the same float on a given CPU's kernels
  // (an AVX2 machine's last training loss did): not both.
  CHECK((value("last_loss", "fused") != value("last_loss", "explicit") ||
         value("val_loss", "fused") != value("val_loss", "explicit")));
}

TEST_CASE("diagnose times every phase of the transformer's step and counts its FLOPs",
          "[integration][torch]") {
  Sandbox box;
  const auto doc = gpusweep::test::gpusweep_json(
      box,
      "diagnose transformer --set device=cpu --set threads=1 --set batch_size=4 --set seq_len=32 "
      "--matmul-seconds 0 --db results.db --format json");
  const auto& phases = doc.at("phases_s_per_step");
  // The windows gathered from the resident corpus are the input; the forward
  // and its loss, backward, optimiser and the loss read each have time. The
  // corpus lives on the trial's device: no host-to-device copy to time.
  for (const char* phase : {"input_wait", "forward", "backward", "optimizer", "host_sync"}) {
    INFO(phase);
    CHECK(phases.at(phase).get<double>() > 0);
  }
  // 3 x 2 x (2 layers x (4 + 8) x 128^2 + 32 x 128 + 128 x 64) x 4 x 32 tokens.
  const double per_layer = 12.0 * 128 * 128 + 32.0 * 128;
  CHECK(doc.at("flops_per_step").get<double>() ==
        Approx(3 * 2 * (2 * per_layer + 128.0 * 64) * 4 * 32));
}

TEST_CASE("transformer sizes its blocks by time under measure.block_s", "[integration][torch]") {
  gpusweep::test::check_blocks_sized_by_time(
      "transformer", R"({"device": "cpu", "threads": 1, "batch_size": 4, "seq_len": 32})");
}
