// The script workload through the real binary: users' own training scripts
// (a plain loop on a vision model, a transformers Trainer, a Lightning
// Trainer), as docs/your-script.md gives them, unchanged but for gpusweep's
// line, swept and compared; a flag the script ignores failing its trial by
// name; and each way a script can go wrong told with what to do.
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

const std::string kSource = GPUSWEEP_SOURCE_DIR;
const std::string kScripts = kSource + "/tests/fixtures/scripts/";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The fenced block docs/your-script.md marks `<!-- example: name -->`, as
// a user would copy it.
std::string docs_example(const std::string& name) {
  const std::string doc = read_file(kSource + "/docs/your-script.md");
  const std::string marker = "<!-- example: " + name + " -->";
  const auto at = doc.find(marker);
  REQUIRE(at != std::string::npos);
  const auto open = doc.find('\n', doc.find("```", at)) + 1;
  const auto close = doc.find("\n```", open);
  REQUIRE(close != std::string::npos);
  return doc.substr(open, close - open + 1);
}

std::vector<std::string> code_lines(const std::string& text) {
  std::istringstream in(text);
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

// The docs' example `name` (name.py and name.json) in the sandbox; the
// script's lines that its original (tests/fixtures/scripts/original/, the
// script before gpusweep) lacks.
std::vector<std::string> write_example(const Sandbox& box, const std::string& name) {
  const std::string script = docs_example(name + ".py");
  box.write(name + ".py", script);
  box.write(name + ".json", docs_example(name + ".json"));
  return added_lines(read_file(kScripts + "original/" + name + ".py"), script);
}

// compare's rows of the sweep: four, each but the baseline with an interval
// around its ratio.
nlohmann::json compared_with_intervals(const Sandbox& box, const std::string& sweep) {
  const auto cmp = box.gpusweep("compare --db results.db --sweep " + sweep + " --format json");
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
  return rows;
}

const char* kLoopMeasure =
    R"("measure": {"warmup_steps": 3, "steps_per_block": 20, "blocks": 5, "repeats": 3,
                   "min_block_s": 0, "timeout_s": 120})";

std::string loop_sweep(const std::string& name, const std::string& extra_base,
                       const std::string& grid) {
  return R"({"name": ")" + name + R"(", "workload": "script",
    "base": {"script": ")" +
         kScripts + R"(loop_train.py", "device": "cpu", "threads": 1,
             "flags": {"batch_size": "--batch-size", "precision": {"fp32": [], "bf16": ["--amp"]}})" +
         extra_base + R"(},
    "grid": )" +
         grid + ", " + kLoopMeasure + "}";
}

}  // namespace

TEST_CASE("the docs' plain loop on a vision model, one line added, sweeps to a compare table",
          "[integration][torch][script][transformers]") {
  Sandbox box;
  // What the user changed: the import and the step line.
  const auto added = write_example(box, "vision_loop");
  REQUIRE(added.size() == 2);
  CHECK_THAT(added[0], Contains("import gpusweep"));
  CHECK_THAT(added[1], Contains("gpusweep.step(samples=args.batch_size)"));
  const auto r = box.gpusweep("run vision_loop.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 12);
  // Each trial's steps took the batch the sweep set: the flag reached the
  // script's parser.
  CHECK(box.count("SELECT count(*) FROM trial_summary s JOIN trials t ON t.id = s.trial_id "
                  "WHERE s.samples_per_step = json_extract(t.config_json, '$.batch_size')") == 12);
  compared_with_intervals(box, "vision_loop");
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
  // PyTorch's FLOP counter over one warmup step of the fp32 trial: its two
  // Linear layers (32x64, 64x4) at batch 8 forward, their weights'
  // gradients and the second's input gradient (the data needs none).
  const double flops = 8 * 2 * (32 * 64 + 64 * 4 + 64 * 4 + 64 * 4 + 32 * 64);
  CHECK(metric(box, "flops_per_step", config_is("precision", "'fp32'")) == flops);
  const auto cmp = box.gpusweep("compare --db results.db --format json");
  INFO(cmp.output);
  const auto row = nlohmann::json::parse(cmp.output).at(0);
  REQUIRE(row["achieved_flops"].is_number());
  CHECK(row["achieved_flops"].get<double>() ==
        Approx(flops * row["throughput_median"].get<double>() / 8).epsilon(1e-12));
  // Each trial measured its CPU's matmul peak after warmup: the MFU is the
  // achieved FLOP/s over the highest of its config's.
  REQUIRE(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
                    "m.name = 'matmul_peak_gflops_cpu' AND m.value > 0 AND " +
                    config_is("precision", "'fp32'")) == 3);
  const double peak =
      std::stod(box.text("SELECT CAST(max(m.value) AS TEXT) FROM metrics m JOIN trials t ON t.id = "
                         "m.trial_id WHERE m.name = 'matmul_peak_gflops_cpu' AND " +
                         config_is("precision", "'fp32'")));
  REQUIRE(row["mfu"].is_number());
  CHECK(row["mfu"].get<double>() ==
        Approx(row["achieved_flops"].get<double>() / (peak * 1e9)).epsilon(1e-9));
  // results: each trial's own, in the table and the machine formats.
  const auto listed = box.gpusweep("results --db results.db --format json");
  INFO(listed.output);
  int with_mfu = 0;
  for (const auto& t : nlohmann::json::parse(listed.output)) {
    if (t["status"] != "ok") continue;
    REQUIRE(t["achieved_flops"].is_number());
    CHECK(t["achieved_flops"].get<double>() ==
          Approx(flops * t["throughput_median"].get<double>() / 8).epsilon(1e-12));
    with_mfu += t["mfu"].is_number() && t["mfu"].get<double>() > 0;
  }
  CHECK(with_mfu == 3);
  CHECK_THAT(box.gpusweep("results --db results.db").output,
             Contains("FLOP/s") && Contains("% MFU"));
  // A setting no flag carries skips the trial, saying which map lacks it.
  Sandbox box2;
  box2.write("s.json", loop_sweep("unmapped", "", R"({"grad_accum": [1, 2]})"));
  box2.gpusweep("run s.json --db results.db");
  CHECK_THAT(box2.text("SELECT coalesce(error, '') FROM trials t WHERE " +
                       config_is("grad_accum", "2") + " LIMIT 1"),
             Contains("grad_accum=2: the flag map of the sweep has no flag for grad_accum, and "
                      "the script did not ask for it (gpusweep.setting)"));
  // A script that asks for the setting itself takes it with no flag.
  Sandbox box3;
  box3.write("asks.py",
             "import torch\nimport gpusweep\nn = gpusweep.setting('batch_size', 16)\n"
             "w = torch.nn.Linear(8, 2)\nopt = torch.optim.SGD(w.parameters(), lr=0.1)\n"
             "for _ in range(100000):\n    loss = w(torch.randn(n, 8)).sum()\n"
             "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
             "    gpusweep.step(samples=n)\n");
  box3.write("s.json", R"({"name": "asks", "workload": "script",
    "base": {"script": "asks.py", "device": "cpu", "threads": 1},
    "grid": {"batch_size": [4, 8]},
    "measure": {"warmup_steps": 2, "steps_per_block": 10, "blocks": 5, "repeats": 1,
                "min_block_s": 0, "timeout_s": 120}})");
  const auto asks = box3.gpusweep("run s.json --db results.db");
  INFO(asks.output);
  CHECK(box3.count("SELECT count(*) FROM trial_summary s JOIN trials t ON t.id = s.trial_id "
                   "WHERE t.status = 'ok' AND s.samples_per_step = "
                   "json_extract(t.config_json, '$.batch_size')") == 2);
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
             Contains("ended by itself after 4 optimiser steps, during the measurement: the "
                      "measurement needs at least 28 (2 warmup, then 5 blocks of 5"));
  CHECK_THAT(error_of("script=raises.py"), Contains("ValueError: the loss went NaN at step 6"));
  // Its traceback, with the script's line, is in the trial's log.
  const auto trial = box.gpusweep("results --db results.db --trial " +
                                  box.text("SELECT id FROM trials ORDER BY id DESC LIMIT 1"));
  INFO(trial.output);
  CHECK_THAT(trial.output, Contains("Traceback (most recent call last)"));
  CHECK_THAT(trial.output, Contains("raise ValueError('the loss went NaN at step 6')"));
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

  // A map naming a setting gpusweep does not have is refused before any
  // trial runs, with the nearest name.
  Sandbox box2;
  box2.write("m.json", loop_sweep("misnamed", "", R"({"batch_size": [8]})"));
  text = box2.read("m.json");
  text.replace(text.find(R"({"batch_size": "--batch-size")"), 29,
               R"({"batchsize": "--batch-size")");
  box2.write("m.json", text);
  const auto misnamed = box2.gpusweep("run m.json --db results.db");
  INFO(misnamed.output);
  CHECK(misnamed.code == 2);
  CHECK_THAT(misnamed.output, Contains("m.json: base.flags: the map names 'batchsize', which is "
                                       "not a setting of the script workload (did you mean "
                                       "batch_size?)"));
  CHECK((!std::filesystem::exists(box2.path("results.db")) ||
         box2.count("SELECT count(*) FROM trials") == 0));
}

TEST_CASE("the docs' Trainer script with one added callback sweeps, with its eval_loss",
          "[integration][torch][script][transformers]") {
  Sandbox box;
  const auto added = write_example(box, "hf_train");
  REQUIRE(added.size() == 2);
  CHECK_THAT(added[0], Contains("import gpusweep"));
  CHECK_THAT(added[1], Contains("callbacks=[gpusweep.hf.Callback()]"));
  const auto r = box.gpusweep("run hf_train.json --db results.db");
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
  // Each config's quality against the baseline's, from the Trainer's own
  // evaluation.
  for (const auto& row : compared_with_intervals(box, "gpt2_trainer")) {
    if (!row["baseline"].get<bool>()) CHECK(row["quality_change"].is_number());
  }

  // A map of the sweep's own that names a TrainingArguments flag that does
  // not accumulate: the Trainer's steps ran one backward pass each.
  Sandbox box2;
  write_example(box2, "hf_train");
  auto sweep = nlohmann::json::parse(box2.read("hf_train.json"));
  sweep["base"]["flags"] = {{"batch_size", "--per_device_train_batch_size"},
                            {"grad_accum", "--eval_steps"}};
  sweep["grid"] = {{"grad_accum", {2}}};
  sweep["measure"]["repeats"] = 1;
  box2.write("hf_train.json", sweep.dump());
  const auto r2 = box2.gpusweep("run hf_train.json --db results.db");
  INFO(r2.output);
  CHECK_THAT(
      box2.text("SELECT coalesce(error, '') FROM trials LIMIT 1"),
      Contains("grad_accum=2 did nothing: its first 2 steps ran 1, 1 backward pass(es) each"));
}

TEST_CASE("the docs' Lightning script with one added callback sweeps, grad accumulation acting",
          "[integration][torch][script][lightning]") {
  Sandbox box;
  const auto added = write_example(box, "lightning_train");
  REQUIRE(added.size() == 2);
  CHECK_THAT(added[0], Contains("import gpusweep"));
  CHECK_THAT(added[1], Contains("callbacks=[gpusweep.lightning.Callback()]"));
  const auto r = box.gpusweep("run lightning_train.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 12);
  // A step at grad_accum 2 took two batches of 32.
  CHECK(box.count("SELECT count(*) FROM trial_summary s JOIN trials t ON t.id = s.trial_id WHERE "
                  "s.samples_per_step = 32 * json_extract(t.config_json, '$.grad_accum')") == 12);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE quality > 0") == 12);
  compared_with_intervals(box, "lightning_mlp");

  // The map names the wrong flag for grad_accum: the script's steps ran one
  // backward pass each, and the trial says so.
  Sandbox box2;
  write_example(box2, "lightning_train");
  auto sweep = nlohmann::json::parse(box2.read("lightning_train.json"));
  sweep["base"]["flags"]["grad_accum"] = "--log-every";
  sweep["grid"] = {{"grad_accum", {2}}};
  sweep["measure"]["repeats"] = 1;
  box2.write("lightning_train.json", sweep.dump());
  box2.gpusweep("run lightning_train.json --db results.db");
  CHECK_THAT(box2.text("SELECT coalesce(error, '') FROM trials LIMIT 1"),
             Contains("grad_accum=2 did nothing: its first 2 steps ran 1, 1 backward pass(es) "
                      "each, not 2"));
}

TEST_CASE("plugins --check runs a script under each setting its map carries, saying what acted",
          "[integration][torch][script]") {
  Sandbox box;
  box.write("loop.py", read_file(kScripts + "loop_train.py"));
  const std::string check =
      "plugins --check script --set script=loop.py --set threads=1 --set 'flags={\"batch_size\": "
      "\"--batch-size\", \"precision\": {\"fp32\": [], \"bf16\": [\"--amp\"]}}'";
  const auto r = box.gpusweep(check);
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("precision=\"bf16\" acts: "));
  CHECK_THAT(r.output, Contains("module forward passes of the watched steps ran in bf16"));
  CHECK_THAT(r.output, Contains("batch_size=16 acts: each step took 16 samples"));
  // The same script told to take --amp and do nothing with it.
  const auto ignored = box.gpusweep(check + " --set args=--ignore-amp");
  INFO(ignored.output);
  CHECK(ignored.code != 0);
  CHECK_THAT(ignored.output, Contains("precision=bf16 did nothing: no forward pass of its first 2 "
                                      "steps ran under autocast to torch.bfloat16"));
  CHECK_THAT(ignored.output, Contains("batch_size=16 acts"));
}

TEST_CASE("check compares two versions of one script", "[integration][torch][script]") {
  Sandbox box;
  const std::string v1 = read_file(kScripts + "loop_train.py");
  std::string v2 = v1;
  // The head's model is 64 times as wide: its steps are several times slower.
  const std::string narrow = "\"--width\", type=int, default=64";
  v2.replace(v2.find(narrow), narrow.size(), "\"--width\", type=int, default=4096");
  box.write("v1.py", v1);
  box.write("v2.py", v2);
  box.write("c.json", R"({"name": "loop_check", "workload": "script",
    "base": {"script": "v1.py", "device": "cpu", "threads": 1, "batch_size": 256,
             "flags": {"batch_size": "--batch-size"}},
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
