// The python workload through the real binary: a user's module measured
// under the same protocol as a C++ plugin, each way a Python workload can
// fail recorded as its own status with the reason (and the traceback in the
// log), bad modules refused before anything runs, the common settings seen
// by the Python step with their effect, the examples' sweeps, and a host
// killed mid-sweep resumed.
#include "harness.hpp"

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <string>

using Catch::Matchers::Contains;
using gpusweep::test::await_block;
using gpusweep::test::config_is;
using gpusweep::test::metric;
using gpusweep::test::none_left;
using gpusweep::test::Sandbox;

namespace {

const std::string kFixtures = std::string(GPUSWEEP_SOURCE_DIR) + "/tests/fixtures/python/";

std::string status_of(const Sandbox& box, const std::string& fault) {
  return box.text("SELECT status FROM trials t WHERE " + config_is("fault", "'" + fault + "'"));
}

std::string error_of(const Sandbox& box, const std::string& fault) {
  return box.text("SELECT coalesce(error, '') FROM trials t WHERE " +
                  config_is("fault", "'" + fault + "'"));
}

}  // namespace

TEST_CASE("a Python workload's failures are each their trial's status, with the reason",
          "[integration][torch][python][faults]") {
  Sandbox box;
  box.write("f.json", R"({"name": "faults", "workload": "python",
    "base": {"module": ")" +
                          kFixtures + R"(faults.py", "device": "cpu", "threads": 1},
    "grid": {"fault": ["none", "create", "step", "evaluate", "exit", "os_exit", "loop", "oom",
                       "skip"]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 5, "blocks": 5,
                "timeout_s": 60, "min_block_s": 0, "interleave": 1}})");
  // One trial at a time, with a minute each: eight interpreters importing
  // torch at once beside a build took more than 20 s to reach their first
  // step, and even alone the first one (a cold import) once took 20 s in
  // setup (the step fault ended `timeout`, not `failed`). The loop fault
  // waits out the minute.
  const auto r = box.gpusweep("run f.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  // The healthy trial is measured in full.
  CHECK(status_of(box, "none") == "ok");
  CHECK(box.count("SELECT count(*) FROM blocks b JOIN trials t ON t.id = b.trial_id WHERE " +
                  config_is("fault", "'none'")) == 5);
  CHECK(metric(box, "val_loss", config_is("fault", "'none'")) >= 0);
  CHECK(metric(box, "loss_reads", config_is("fault", "'none'")) > 0);
  CHECK(status_of(box, "create") == "failed");
  CHECK_THAT(error_of(box, "create"), Contains("create(config)") &&
                                          Contains("RuntimeError: no model today") &&
                                          Contains("faults.py:"));
  CHECK(status_of(box, "step") == "failed");
  CHECK_THAT(error_of(box, "step"),
             Contains("step(): ValueError: bad step 3 (at ") && Contains("faults.py:"));
  // The whole traceback is in the trial's log.
  CHECK_THAT(box.text("SELECT stderr_tail FROM trials t WHERE " + config_is("fault", "'step'")),
             Contains("Traceback (most recent call last)") && Contains("in fail"));
  CHECK(status_of(box, "evaluate") == "failed");
  CHECK_THAT(error_of(box, "evaluate"), Contains("'val_loss' must be a finite number"));
  CHECK(status_of(box, "exit") == "failed");
  CHECK_THAT(error_of(box, "exit"), Contains("sys.exit(4)"));
  CHECK(status_of(box, "os_exit") == "crashed");
  CHECK_THAT(error_of(box, "os_exit"), Contains("code 9"));
  CHECK(status_of(box, "loop") == "timeout");
  CHECK(status_of(box, "oom") == "oom");
  CHECK_THAT(error_of(box, "oom"), Contains("MemoryError: cannot allocate the activations"));
  CHECK(status_of(box, "skip") == "skipped");
  CHECK(error_of(box, "skip") == "this config is not for this machine");
  CHECK(none_left(box));
}

TEST_CASE("a Python trial past measure.max_memory on the CPU ends oom, as a C++ one does",
          "[integration][torch][python][faults]") {
  Sandbox box;
  // LibTorch's CPU allocator fails under the address-space cap with a
  // RuntimeError ("can't allocate memory"), not a MemoryError: the C++
  // boundary's markers, handed to the Python side, call it oom.
  box.write("a.json", R"({"name": "alloc", "workload": "python",
    "base": {"module": ")" +
                          kFixtures + R"(faults.py", "device": "cpu", "threads": 1,
             "fault": "alloc"},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 5, "blocks": 5,
                "timeout_s": 60, "min_block_s": 0, "max_memory": "3GiB"}})");
  const auto r = box.gpusweep("run a.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 3);  // a run whose every trial failed
  CHECK(status_of(box, "alloc") == "oom");
  CHECK_THAT(error_of(box, "alloc"), Contains("can't allocate memory"));
}

TEST_CASE("a Python module that cannot be a workload is refused before anything runs",
          "[integration][torch][python][faults]") {
  Sandbox box;
  const auto refused = [&](const std::string& base, const std::string& grid = "{}") {
    box.write("s.json", R"({"name": "bad", "workload": "python", "base": )" + base +
                            R"(, "grid": )" + grid + "}");
    const auto r = box.gpusweep("run s.json --db results.db");
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(!std::filesystem::exists(box.db()));  // nothing started, nothing recorded
    return r.output;
  };
  CHECK_THAT(refused(R"({"module": ")" + kFixtures + R"(broken_import.py"})"),
             Contains("s.json: base.module: ") && Contains("ZeroDivisionError: division by zero") &&
                 Contains("broken_import.py:4"));
  CHECK_THAT(refused(R"({"module": "missing.py"})"),
             Contains("s.json: base.module: ") &&
                 Contains("module '" + box.path("missing.py") + "' does not exist"));
  CHECK_THAT(refused(R"({"module": ")" + kFixtures + R"(bad_manifest.py"})"),
             Contains("parameter 'width' default: 0 is below the minimum 1"));
  // module:factory names the factory; one the module lacks is refused by name.
  CHECK_THAT(refused(R"({"module": ")" + kFixtures + R"(faults.py:make"})"),
             Contains("has no function make(config)"));
  CHECK_THAT(refused(R"({"threads": 1})"), Contains("s.json: base.module is required"));
  CHECK_THAT(refused("{}", R"({"module": ["a.py", "b.py"]})"),
             Contains("s.json: grid.module: ") && Contains("set it in base"));
}

TEST_CASE("the common settings reach a Python step with their effect",
          "[integration][torch][python]") {
  Sandbox box;
  box.write("p.json", R"({"name": "probe", "workload": "python",
    "base": {"module": ")" +
                          kFixtures + R"(probe.py", "device": "cpu", "threads": 1},
    "grid": {"precision": ["fp32", "bf16"], "channels_last": [false, true],
             "zero_grad_to_none": [true, false]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5,
                "timeout_s": 60, "min_block_s": 0}})");
  const auto r = box.gpusweep("run p.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 8);
  for (const bool bf16 : {false, true}) {
    for (const bool cl : {false, true}) {
      for (const bool none : {false, true}) {
        const std::string c = config_is("precision", bf16 ? "'bf16'" : "'fp32'") + " AND " +
                              config_is("channels_last", cl ? "1" : "0") + " AND " +
                              config_is("zero_grad_to_none", none ? "1" : "0");
        INFO("bf16 " << bf16 << ", channels_last " << cl << ", zero_grad_to_none " << none);
        CHECK(metric(box, "forward_bf16", c) == (bf16 ? 1 : 0));
        CHECK(metric(box, "weights_channels_last", c) == (cl ? 1 : 0));
        CHECK(metric(box, "input_channels_last", c) == (cl ? 1 : 0));
        CHECK(metric(box, "grads_none_after_zero_grad", c) == (none ? 1 : 0));
        CHECK(metric(box, "compiled", c) == 0);
      }
    }
  }
  // torch.compile: the model compiled, its compile time apart, and the
  // threads setting applied in C++ is the Python step's too.
  const auto c = box.gpusweep(
      "run p.json --db results.db --set compile=true --set precision=fp32 "
      "--set channels_last=false --set zero_grad_to_none=true --set grad_accum=2");
  INFO(c.output);
  REQUIRE(c.code == 0);
  const std::string compiled = config_is("compile", "1");
  CHECK(metric(box, "compiled", compiled) == 1);
  CHECK(metric(box, "compile_s", compiled) > 0);
  CHECK(box.text("SELECT CAST(s.samples_per_step AS TEXT) FROM trial_summary s JOIN trials t ON "
                 "t.id = s.trial_id WHERE " +
                 compiled) == "8.0");
}

TEST_CASE("the Python examples' sweeps run from their folder and compare gives intervals",
          "[integration][torch][python]") {
  Sandbox box;
  for (const std::string name : {"restoration", "timeseries"}) {
    // The example as shipped (base.module relative to the sweep file's
    // folder), made quick: no compile, tiny blocks, two repeats.
    const auto r =
        box.gpusweep("run " + std::string(GPUSWEEP_SOURCE_DIR) + "/examples/python/" + name +
                     "_sweep.json --db results.db --set compile=false --set threads=1 "
                     "--set measure.warmup_steps=1 --set measure.steps_per_block=2 "
                     "--set measure.repeats=2 --set measure.min_block_s=0");
    INFO(r.output);
    REQUIRE(r.code == 0);
    const auto c = box.gpusweep("compare --db results.db --format json");
    INFO(c.output);
    REQUIRE(c.code == 0);
    const auto rows = nlohmann::json::parse(c.output);
    int with_interval = 0;
    for (const auto& row : rows) {
      if (row["ratio"].is_number() && row["ci_low"].is_number() && row["ci_high"].is_number()) {
        CHECK(row["ci_low"].get<double>() <= row["ratio"].get<double>());
        CHECK(row["ratio"].get<double>() <= row["ci_high"].get<double>());
        ++with_interval;
      }
    }
    CHECK(with_interval >= 1);
  }
  CHECK(box.count("SELECT count(*) FROM trials WHERE status != 'ok'") == 0);
  CHECK(box.count("SELECT count(DISTINCT json_extract(config_json, '$.module')) FROM trials") == 2);
}

TEST_CASE("new-plugin --python writes a workload plugins --check passes, determinism included",
          "[integration][torch][python]") {
  Sandbox box;
  const auto made = box.gpusweep("new-plugin --python demo");
  INFO(made.output);
  REQUIRE(made.code == 0);
  const auto ok = box.gpusweep("plugins --check python --set module=demo/demo.py");
  INFO(ok.output);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.output, Contains("quality val_loss (lower is better)") &&
                            Contains("deterministic: a second run with the same config and seed") &&
                            Contains("no problems found"));
  // A module whose claim is false is caught, with the metric that differed.
  const auto liar =
      box.gpusweep("plugins --check python --set module=" + kFixtures + "claims_determinism.py");
  INFO(liar.output);
  CHECK(liar.code == 1);
  CHECK_THAT(liar.output, Contains("evaluated differently: val_loss "));
  // Without a module there is nothing to run, and it says how to give one.
  const auto none = box.gpusweep("plugins --check python");
  CHECK_THAT(none.output, Contains("--set module=VALUE"));
}

TEST_CASE("diagnose splits a Python step into the phases the SDK and the module time",
          "[integration][torch][python]") {
  Sandbox box;
  const auto r = box.gpusweep(
      "diagnose python --set module=" + std::string(GPUSWEEP_SOURCE_DIR) +
      "/examples/python/restoration.py --set threads=1 --set base_channels=4 --set num_blocks=1 "
      "--set patch_size=16 --set batch_size=2 --matmul-seconds 0 --db results.db --format json");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto d = nlohmann::json::parse(r.output.substr(r.output.find('{')));  // after its preamble
  const auto& phases = d.at("phases_s_per_step");
  // The module's own (forward, backward, optimiser) and the SDK's (the
  // loader's wait, the copy, the loss read) each took time; the rest, what
  // no phase covers, is a small part of the step.
  for (const char* p : {"forward", "backward", "optimizer", "input_wait", "host_sync"}) {
    INFO(p);
    CHECK(phases.at(p).get<double>() > 0);
  }
  CHECK(phases.at("rest").get<double>() < 0.5 * d.at("step_time_s").get<double>());
  CHECK(d.at("host_syncs_per_step").get<double>() == Approx(1.0));
}

TEST_CASE("a host killed during a Python sweep leaves no worker behind, and resume completes",
          "[integration][torch][python][kill][serial]") {
  Sandbox box;
  box.write("k.json", R"({"name": "kill", "workload": "python",
    "base": {"module": ")" +
                          kFixtures + R"(faults.py", "device": "cpu", "threads": 1},
    "grid": {"batch_size": [8, 16]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 5000, "blocks": 5,
                "timeout_s": 120, "min_block_s": 0}})");
  const pid_t host = box.start("run k.json --db results.db", "log.txt");
  await_block(box);
  REQUIRE(::kill(host, SIGKILL) == 0);
  Sandbox::wait(host);
  CHECK(none_left(box));
  const auto r = box.gpusweep("run k.json --db results.db --resume");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  CHECK(box.count("SELECT count(DISTINCT config_hash) FROM trials") == 2);
  CHECK(box.count("SELECT count(*) FROM blocks") == 10);
  CHECK(none_left(box));
}

TEST_CASE("a Python loader builds nothing while its trial waits for its turn or evaluates",
          "[integration][torch][python]") {
  Sandbox box;
  // Two configs take turns; each evaluates after every block. The fixture
  // logs each sample's build (in the loader's worker processes) and each
  // pause and resume of its trial: no sample may be built between the two.
  // Before the SDK paused its loaders, the workers filled their queues during
  // the neighbour's turns and the evaluations.
  box.write("l.json", R"({"name": "loaders", "workload": "python",
    "base": {"module": ")" +
                          kFixtures + R"(loader_pause.py", "device": "cpu", "threads": 1,
             "loader_workers": 2, "prefetch": 2, "log_dir": ")" +
                          box.path("") + R"("},
    "grid": {"tag": [0, 1]},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 3, "blocks": 5,
                "eval_every_blocks": 1, "interleave": 2, "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run l.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  int pauses = 0, built = 0;
  for (const auto& entry : std::filesystem::directory_iterator(box.path(""))) {
    const std::string name = entry.path().filename();
    if (name.rfind("events_", 0) != 0) continue;
    // [P, R) intervals of this trial, then its builds.
    std::vector<std::pair<double, double>> paused;
    std::ifstream events(entry.path());
    std::string what;
    double t = 0, since = -1;
    while (events >> what >> t) {
      if (what == "P" && since < 0) since = t;
      if (what == "R" && since >= 0) {
        paused.emplace_back(since, t);
        since = -1;
      }
    }
    if (since >= 0) paused.emplace_back(since, 1e300);  // paused to the end
    pauses += static_cast<int>(paused.size());
    std::ifstream log(box.path("built_" + name.substr(7)));
    long pid = 0;
    while (log >> pid >> t) {
      ++built;
      for (const auto& [p, q] : paused) {
        INFO("sample built at " << t << " in pid " << pid << " while paused " << p << " to " << q);
        CHECK_FALSE((t > p && t < q));
      }
    }
  }
  // Each trial paused at its turns and evaluations, and its loader built.
  CHECK(pauses >= 10);
  CHECK(built > 0);
}

TEST_CASE(
    "a Python module is importable by a spawned loader, seeded at import, and versioned "
    "with its siblings",
    "[integration][torch][python]") {
  Sandbox box;
  for (const char* f : {"spawn_step.py", "spawn_table.py"}) {
    std::filesystem::copy_file(kFixtures + "spawn/" + f, box.path(f));
  }
  // Two trials of different seeds, each in its own worker process; each
  // step's batches come from a DataLoader worker started by `spawn`, which
  // imports the module by its name (a private name failed it: "DataLoader
  // worker exited unexpectedly").
  box.write("s.json", R"({"name": "spawn", "workload": "python",
    "base": {"module": "spawn_step.py", "device": "cpu", "threads": 1, "loader_workers": 1},
    "grid": {"seed": [3, 4]},
    "measure": {"repeats": 1, "vary_seed": false, "warmup_steps": 2, "steps_per_block": 3,
                "blocks": 5, "interleave": 1, "timeout_s": 120, "min_block_s": 0}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  // The module's import draws the same value in both processes, whatever the
  // trial's seed: the draw of torch.manual_seed(0); torch.rand(()).
  for (const char* seed : {"3", "4"}) {
    CHECK(metric(box, "drawn_at_import", config_is("seed", seed)) ==
          Approx(0.4962565899).epsilon(1e-6));
  }
  // The import's seed is put back: what create() draws follows the trial's.
  CHECK(metric(box, "drawn_in_create", config_is("seed", "3")) !=
        metric(box, "drawn_in_create", config_is("seed", "4")));
  // A changed sibling module is a changed workload: resume refuses to mix.
  std::ofstream(box.path("spawn_table.py"), std::ios::app) << "TARGETS = [1, 2, 4]\n";
  const auto resumed = box.gpusweep("run s.json --db results.db --resume");
  INFO(resumed.output);
  CHECK(resumed.code != 0);
  CHECK_THAT(resumed.output, Contains("is version") && Contains("a module it imports"));
}

namespace {

// The module docs/writing-plugins.md shows under its example marker, as a
// reader would copy it: the ```python block after the marker line.
std::string docs_example() {
  std::ifstream in(std::string(GPUSWEEP_SOURCE_DIR) + "/docs/writing-plugins.md");
  const std::string doc(std::istreambuf_iterator<char>(in), {});
  const size_t marker = doc.find("<!-- gpusweep-example: mine.py");
  REQUIRE(marker != std::string::npos);
  const size_t open = doc.find("```python\n", marker);
  REQUIRE(open != std::string::npos);
  const size_t begin = open + 10;
  const size_t end = doc.find("\n```\n", begin);
  REQUIRE(end != std::string::npos);
  return doc.substr(begin, end - begin + 1);
}

}  // namespace

TEST_CASE("the docs' Python example runs as written, and its grad_accum trials accumulate",
          "[integration][torch][python]") {
  Sandbox box;
  const std::string example = docs_example();
  box.write("mine.py", example);
  const auto sweep = [&](const std::string& name, const std::string& module,
                         const std::string& grid) {
    box.write(name, R"({"name": "docs", "workload": "python",
      "base": {"module": ")" +
                        module + R"(", "device": "cpu", "threads": 1, "batch_size": 8},
      "grid": {"grad_accum": )" +
                        grid + R"(},
      "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5,
                  "timeout_s": 120, "min_block_s": 0}})");
  };
  // As written: both trials ok, the grad_accum=4 one with four backward
  // passes a step, counted by the SDK's hooks on the model's parameters.
  sweep("s.json", "mine.py", "[1, 4]");
  const auto r = box.gpusweep("run s.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  const auto passes = [&](const char* g) {
    const auto q = box.gpusweep(
        "sql \"SELECT m.value FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE m.name = "
        "'backward_passes_per_step' AND json_extract(t.config_json, '$.grad_accum') = " +
        std::string(g) + "\" --db results.db --format json");
    INFO(q.output);
    const auto rows = nlohmann::json::parse(q.output);
    REQUIRE(rows.size() == 1);
    return rows[0]["value"].get<double>();
  };
  CHECK(passes("4") == 4);
  CHECK(passes("1") == 1);

  // Its loop over the micro-batches removed: grad_accum no longer acts, and
  // both plugins --check and the sweep's trial say so by name.
  const std::string loop = "for _ in range(s.grad_accum):";
  const size_t at = example.find(loop);
  REQUIRE(at != std::string::npos);
  std::string broken = example;
  broken.replace(at, loop.size(), "if True:");
  box.write("broken.py", broken);
  const auto check = box.gpusweep("plugins --check python --set module=broken.py");
  INFO(check.output);
  CHECK(check.code == 1);
  CHECK_THAT(check.output, Contains("PROBLEM  grad_accum=2 did nothing: the first 2 steps ran 1, 1 "
                                    "backward pass(es)"));
  // The settings it does honour still pass.
  CHECK_THAT(check.output, Contains("ok       channels_last=true acts") &&
                               Contains("ok       loader_workers=1 acts"));
  sweep("b.json", "broken.py", "[4]");
  const auto b = box.gpusweep("run b.json --db broken.db");
  INFO(b.output);
  const auto trial = box.gpusweep(
      "sql \"SELECT status || ': ' || error FROM trials\" --db "
      "broken.db --format csv");
  CHECK_THAT(trial.output, Contains("failed: step(): gpusweep.SettingIgnored: grad_accum=4 did "
                                    "nothing: the first 2 steps ran 1, 1 backward pass(es)"));
}

TEST_CASE("check judges two versions of a Python step as it judges two plugin builds",
          "[integration][torch][python][timing]") {
  Sandbox box;
  // The step busy-waits: v2 waits 15% longer, v1_again is v1 in another file.
  const std::string module = R"(import time
import gpusweep

MANIFEST = gpusweep.Manifest(name="spin", unit="steps", description="busy-waits a step",
                             quality=gpusweep.Quality("quality"), batch_size=1)
WAIT_S = %WAIT%


class Spin:
    def __init__(self, config):
        pass

    def step(self):
        end = time.perf_counter() + WAIT_S
        while time.perf_counter() < end:
            pass
        return 1

    def evaluate(self):
        return {"quality": 1.0}


def create(config):
    return Spin(config)
)";
  auto with_wait = [&](const std::string& wait) {
    std::string text = module;
    text.replace(text.find("%WAIT%"), 6, wait);
    return text;
  };
  box.write("step_v1.py", with_wait("0.002"));
  box.write("step_v1_again.py", with_wait("0.002"));
  box.write("step_v2.py", with_wait("0.0023"));
  box.write("p.json", R"({"name": "pycheck", "workload": "python",
    "base": {"device": "cpu", "threads": 1},
    "measure": {"warmup_steps": 3, "block_s": 0.1, "blocks": 5, "repeats": 3,
                "timeout_s": 120}})");
  const auto slower = box.gpusweep(
      "check p.json --db results.db --base step_v1.py --head step_v2.py --budget-s 120");
  INFO(slower.output);
  CHECK(slower.code == 1);
  CHECK_THAT(slower.output, Contains("check 'pycheck' (run 1): regression"));
  CHECK_THAT(slower.output, Contains("/step_v2.py (version 1.0.0+"));
  // Each trial ran the module of its build.
  CHECK(box.count("SELECT count(DISTINCT plugin_hash) FROM trials") == 2);

  const auto same = box.gpusweep(
      "check p.json --db results.db --base step_v1.py --head "
      "step_v1_again.py --budget-s 120 --format json");
  INFO(same.output);
  CHECK(same.code == 0);
  CHECK_THAT(same.output, Contains("\"verdict\": \"no regression\""));
}
