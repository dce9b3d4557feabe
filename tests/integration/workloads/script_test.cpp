// The script workload through the real binary: users' own training scripts
// (a plain loop, a transformers Trainer, a Lightning Trainer), unchanged but
// for gpusweep's line, swept and compared; a flag the script ignores failing
// its trial by name; and each way a script can go wrong told with what to do.
#include "harness.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using Catch::Matchers::Contains;
using gpusweep::test::config_is;
using gpusweep::test::metric;
using gpusweep::test::Sandbox;

namespace {

const std::string kScripts = std::string(GPUSWEEP_SOURCE_DIR) + "/tests/fixtures/scripts/";

std::vector<std::string> code_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    out.push_back(line);
  }
  return out;
}

// The code lines of `changed` that `original` lacks (comments and blank
// lines aside): what a user added for gpusweep.
std::vector<std::string> added_lines(const std::string& original, const std::string& changed) {
  auto before = code_lines(original);
  std::vector<std::string> added;
  for (const auto& line : code_lines(changed)) {
    auto it = std::find(before.begin(), before.end(), line);
    if (it == before.end()) {
      added.push_back(line);
    } else {
      before.erase(it);
    }
  }
  return added;
}

const char* kLoopMeasure =
    R"("measure": {"warmup_steps": 3, "steps_per_block": 20, "blocks": 5, "repeats": 3,
                   "min_block_s": 0, "timeout_s": 120})";

std::string loop_sweep(const std::string& name, const std::string& extra_base,
                       const std::string& grid) {
  return R"({"name": ")" + name + R"(", "workload": "script",
    "base": {"script": ")" +
         kScripts + R"(loop_train.py", "device": "cpu", "threads": 1,
             "flags": "{\"batch_size\": \"--batch-size\", \"precision\": {\"fp32\": [], \"bf16\": [\"--amp\"]}}")" +
         extra_base + R"(},
    "grid": )" +
         grid + ", " + kLoopMeasure + "}";
}

}  // namespace

TEST_CASE("a plain training loop with one added line sweeps to a compare table",
          "[integration][torch][script]") {
  // What the user changed: the import and the step line.
  const auto added = added_lines(kScripts + "original/loop_train.py", kScripts + "loop_train.py");
  REQUIRE(added.size() == 2);
  CHECK_THAT(added[0], Contains("import gpusweep"));
  CHECK_THAT(added[1], Contains("gpusweep.step(samples=args.batch_size)"));

  Sandbox box;
  box.write("s.json",
            loop_sweep("loop", "", R"({"batch_size": [8, 32], "precision": ["fp32", "bf16"]})"));
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 12);
  // Each trial's steps took the batch the sweep set: the flag reached the
  // script's parser.
  CHECK(box.count("SELECT count(*) FROM trial_summary s JOIN trials t ON t.id = s.trial_id "
                  "WHERE s.samples_per_step = json_extract(t.config_json, '$.batch_size')") == 12);
  const auto cmp = box.gpusweep("compare --db results.db --sweep loop --format json");
  INFO(cmp.output);
  REQUIRE(cmp.code == 0);
  const auto rows = nlohmann::json::parse(cmp.output);
  REQUIRE(rows.size() == 4);
  int with_interval = 0;
  for (const auto& row : rows) {
    if (row["ci_low"].is_number() && row["ci_high"].is_number()) {
      ++with_interval;
      CHECK(row["ci_low"].get<double>() <= row["ratio"].get<double>());
      CHECK(row["ratio"].get<double>() <= row["ci_high"].get<double>());
    }
  }
  CHECK(with_interval == 3);  // every config but the baseline
}

TEST_CASE("a setting the script ignores fails its trial, naming what was set and seen",
          "[integration][torch][script]") {
  Sandbox box;
  // The map gives --amp, and this run of the script takes it and does nothing.
  box.write("s.json", loop_sweep("ignores", R"(, "args": "--ignore-amp")",
                                 R"({"precision": ["fp32", "bf16"]})"));
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  CHECK(box.text("SELECT status FROM trials t WHERE " + config_is("precision", "'fp32'") +
                 " LIMIT 1") == "ok");
  const std::string error = box.text("SELECT coalesce(error, '') FROM trials t WHERE " +
                                     config_is("precision", "'bf16'") + " LIMIT 1");
  CHECK_THAT(error, Contains("precision=bf16 did nothing: no forward pass of its first 2 steps "
                             "ran under autocast to torch.bfloat16"));
  CHECK_THAT(error, Contains("(the script was run with: --ignore-amp --batch-size 8 --amp)"));
  // A setting no flag carries skips the trial, saying which map lacks it.
  Sandbox box2;
  box2.write("s.json", loop_sweep("unmapped", "", R"({"grad_accum": [1, 2]})"));
  box2.gpusweep("run s.json --db results.db");
  CHECK_THAT(box2.text("SELECT coalesce(error, '') FROM trials t WHERE " +
                       config_is("grad_accum", "2") + " LIMIT 1"),
             Contains("grad_accum=2: the flag map of the sweep has no flag for grad_accum"));
}

TEST_CASE("a script that goes wrong says what happened and what to do",
          "[integration][torch][script]") {
  Sandbox box;
  box.write("never.py", "import time\nwhile True:\n    time.sleep(0.1)\n");
  box.write("early.py", "import gpusweep\nfor _ in range(4):\n    gpusweep.step(samples=1)\n");
  box.write("raises.py",
            "import gpusweep\nfor i in range(100):\n    gpusweep.step(samples=1)\n"
            "    if i == 6:\n        raise ValueError('the loss went NaN at step 6')\n");
  box.write("s.json", R"({"name": "wrong", "workload": "script",
    "base": {"script": "never.py", "device": "cpu", "threads": 1, "step_timeout_s": 3},
    "measure": {"warmup_steps": 2, "steps_per_block": 5, "blocks": 5, "repeats": 1,
                "min_block_s": 0, "timeout_s": 60}})");
  auto error_of = [&box](const std::string& set) {
    const auto run = box.gpusweep("run s.json --db results.db --set " + set);
    INFO(run.output);
    return box.text("SELECT coalesce(error, '') FROM trials ORDER BY id DESC LIMIT 1");
  };
  CHECK_THAT(error_of("script=never.py"),
             Contains("reported no optimiser step for 3 s (before its first step); add the one "
                      "line: gpusweep.step(samples=...)"));
  CHECK_THAT(error_of("script=early.py"),
             Contains("ended by itself after 4 optimiser steps, during the measurement"));
  CHECK_THAT(error_of("script=raises.py"), Contains("ValueError: the loss went NaN at step 6"));
  // The parser's refusal: the loop script does not know --batchsize.
  box.write("p.json", loop_sweep("refused", "", R"({"batch_size": [8]})"));
  std::string text = box.read("p.json");
  text.replace(text.find("--batch-size"), 12, "--batchsize");
  box.write("p.json", text);
  box.gpusweep("run p.json --db results.db");
  const std::string refused =
      box.text("SELECT coalesce(error, '') FROM trials ORDER BY id DESC LIMIT 1");
  CHECK_THAT(refused, Contains("exited with status 2 before its first step"));
  CHECK_THAT(refused, Contains("--batchsize 8"));
}

TEST_CASE("a transformers Trainer script with one added callback sweeps, with its eval_loss",
          "[integration][torch][script][transformers]") {
  const auto added = added_lines(kScripts + "original/hf_train.py", kScripts + "hf_train.py");
  REQUIRE(added.size() == 2);
  CHECK_THAT(added[0], Contains("import gpusweep"));
  CHECK_THAT(added[1], Contains("callbacks=[gpusweep.hf.Callback()]"));
  Sandbox box;
  box.write("s.json", R"({"name": "gpt2", "workload": "script",
    "base": {"script": ")" +
                          kScripts + R"(hf_train.py", "device": "cpu", "threads": 1,
             "args": "--output_dir out --use_cpu --max_steps 10000 --save_strategy no --report_to none --logging_steps 1000 --learning_rate 1e-3",
             "flags": "hf", "quality": "eval_loss", "higher_is_better": false},
    "grid": {"batch_size": [4, 8], "precision": ["fp32", "bf16"]},
    "measure": {"warmup_steps": 2, "steps_per_block": 4, "blocks": 5, "repeats": 3,
                "min_block_s": 0, "timeout_s": 300}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 12);
  // Tokens beside samples: every step's tokens are its samples' 32 (the
  // sequence length the callback counted in the forward inputs), so the two
  // throughputs of the same blocks stand exactly in that ratio; no timing
  // is compared.
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE abs(secondary_throughput_median - "
                  "32 * throughput_median) <= 1e-9 * throughput_median") == 12);
  // The Trainer's own evaluation is each trial's quality.
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE quality > 0 AND quality_metric = "
                  "'quality'") == 12);
  const auto cmp = box.gpusweep("compare --db results.db --sweep gpt2 --format json");
  INFO(cmp.output);
  const auto rows = nlohmann::json::parse(cmp.output);
  REQUIRE(rows.size() == 4);
  // Each config's quality against the baseline's, from the Trainer's own
  // evaluation.
  for (const auto& row : rows) {
    if (!row["baseline"].get<bool>()) CHECK(row["quality_change"].is_number());
  }

  // A map of the sweep's own that names a TrainingArguments flag that does
  // not accumulate: the Trainer's steps ran one backward pass each.
  Sandbox box2;
  std::string text = box.read("s.json");
  text.replace(
      text.find(R"("flags": "hf")"), 13,
      R"("flags": "{\"batch_size\": \"--per_device_train_batch_size\", \"grad_accum\": \"--eval_steps\"}")");
  text.replace(text.find(R"("precision": ["fp32", "bf16"])"), 29, R"("grad_accum": [2])");
  text.replace(text.find(R"("batch_size": [4, 8])"), 20, R"("batch_size": [4])");
  box2.write("s.json", text);
  const auto r2 = box2.gpusweep("run s.json --db results.db");
  INFO(r2.output);
  CHECK_THAT(
      box2.text("SELECT coalesce(error, '') FROM trials LIMIT 1"),
      Contains("grad_accum=2 did nothing: its first 2 steps ran 1, 1 backward pass(es) each"));
}

TEST_CASE("a Lightning script with one added callback sweeps, grad accumulation seen to act",
          "[integration][torch][script][lightning]") {
  const auto added =
      added_lines(kScripts + "original/lightning_train.py", kScripts + "lightning_train.py");
  REQUIRE(added.size() == 2);
  CHECK_THAT(added[1], Contains("callbacks=[gpusweep.lightning.Callback()]"));
  Sandbox box;
  const std::string flags =
      R"({\"batch_size\": \"--batch-size\", \"grad_accum\": \"--accumulate\", \"precision\": {\"fp32\": [\"--precision\", \"32-true\"], \"bf16\": [\"--precision\", \"bf16-mixed\"]}})";
  box.write("s.json", R"({"name": "mlp", "workload": "script",
    "base": {"script": ")" +
                          kScripts + R"(lightning_train.py", "device": "cpu", "threads": 1,
             "batch_size": 32, "flags": ")" +
                          flags + R"(", "quality": "val_loss"},
    "grid": {"grad_accum": [1, 2], "precision": ["fp32", "bf16"]},
    "measure": {"warmup_steps": 2, "steps_per_block": 10, "blocks": 5, "repeats": 3,
                "min_block_s": 0, "timeout_s": 300}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 12);
  // A step at grad_accum 2 took two batches of 32.
  CHECK(box.count("SELECT count(*) FROM trial_summary s JOIN trials t ON t.id = s.trial_id WHERE "
                  "s.samples_per_step = 32 * json_extract(t.config_json, '$.grad_accum')") == 12);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE quality > 0") == 12);
  const auto cmp = box.gpusweep("compare --db results.db --sweep mlp");
  INFO(cmp.output);
  CHECK(cmp.code == 0);
  CHECK_THAT(cmp.output, Contains("95% CI"));

  // The map names the wrong flag for grad_accum: the script's steps ran one
  // backward pass each, and the trial says so.
  Sandbox box2;
  std::string text = box.read("s.json");
  text.replace(text.find(R"(\"--accumulate\")"), 16, R"(\"--log-every\")");
  text.replace(text.find(R"("grad_accum": [1, 2])"), 20, R"("grad_accum": [2])");
  box2.write("s.json", text);
  box2.gpusweep("run s.json --db results.db");
  CHECK_THAT(box2.text("SELECT coalesce(error, '') FROM trials LIMIT 1"),
             Contains("grad_accum=2 did nothing: its first 2 steps ran 1, 1 backward pass(es) "
                      "each, not 2"));
}

TEST_CASE("check compares two versions of one script", "[integration][torch][script]") {
  Sandbox box;
  std::ifstream in(kScripts + "loop_train.py");
  const std::string v1((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string v2 = v1;
  // The head's model is 64 times as wide: its steps are several times slower.
  const std::string narrow = "\"--width\", type=int, default=64";
  v2.replace(v2.find(narrow), narrow.size(), "\"--width\", type=int, default=4096");
  box.write("v1.py", v1);
  box.write("v2.py", v2);
  box.write("c.json", R"({"name": "loop_check", "workload": "script",
    "base": {"script": "v1.py", "device": "cpu", "threads": 1, "batch_size": 256,
             "flags": "{\"batch_size\": \"--batch-size\"}"},
    "measure": {"warmup_steps": 3, "steps_per_block": 20, "blocks": 5, "repeats": 3,
                "min_block_s": 0, "timeout_s": 120}})");
  const auto r =
      box.gpusweep("check c.json --db results.db --base v1.py --head v2.py --budget-s 90");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("check 'loop_check' (run 1): regression"));
  // Each build is its script's version: two digests, two plugin builds.
  CHECK(box.count("SELECT count(DISTINCT plugin_version) FROM trials") == 2);
}
