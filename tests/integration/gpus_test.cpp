// One GPU per concurrent worker and the device memory cap, end to end, on a
// machine without a GPU: the fake NVML says there are four, and the
// fake_cuda fixture reports a CUDA device and takes the device cap as a
// CUDA plugin does. What the worker was given is recorded with the trial's
// runtime (cuda_visible_devices), which is what CUDA in the trial sees.
#include "harness.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace gpusweep;
using namespace gpusweep::test;
using Catch::Matchers::Contains;

namespace {

// `gpusweep ARGS` in the sandbox with the fake NVML of `gpus` GPUs and the
// environment `env` ("NAME=value ..."; may be empty).
Result run_on_fake_gpus(const Sandbox& box, int gpus, const std::string& env,
                        const std::string& args) {
  return run_shell("cd '" + box.path("") + "' && export GPUSWEEP_NVML_LIBRARY='" +
                   GPUSWEEP_FAKE_NVML + "' FAKE_NVML_GPUS=" + std::to_string(gpus) +
                   " GPUSWEEP_PLUGIN_PATH='" + GPUSWEEP_TEST_PLUGIN_DIR + "' " + env + " && '" +
                   GPUSWEEP_BIN + "' " + args + " 2>&1");
}

// The CUDA_VISIBLE_DEVICES each trial's worker ran with, one per trial.
std::multiset<std::string> visible_per_trial(const Sandbox& box) {
  std::multiset<std::string> out;
  db::Connection c(box.db(), db::Connection::Mode::read_only);
  auto st = c.prepare(
      "SELECT coalesce(json_extract(e.details_json, '$.runtime.cuda_visible_devices'), '-') "
      "FROM trials t JOIN environments e ON e.id = t.environment_id");
  while (st.step()) out.insert(st.get_text(0));
  return out;
}

const char* kGpuSweep = R"({"name": "g", "workload": "fake_cuda",
  "base": {"device": "cuda", "spin_ms": 2},
  "grid": {"batch_size": [1, 2, 3, 4]},
  "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 25, "blocks": 5,
              "interleave": 1}})";

std::string uuid(int i) { return "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(i); }

}  // namespace

TEST_CASE("run --jobs 2 on four GPUs gives each running trial a GPU of its own", "[integration]") {
  Sandbox box;
  box.write("s.json", kGpuSweep);
  const auto r = run_on_fake_gpus(box, 4, "", "run s.json --db results.db --jobs 2");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("one GPU per worker"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 4);
  // The trials overlapped (two at a time) and ran on the first two GPUs,
  // named by UUID: a pool of two can never give two running trials one GPU.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'overlap_trials' AND value >= 1") >=
        2);
  const auto seen = visible_per_trial(box);
  CHECK(seen.size() == 4);
  CHECK(std::set<std::string>(seen.begin(), seen.end()) == std::set<std::string>{uuid(0), uuid(1)});
}

TEST_CASE("run --gpus picks the GPUs, counted among those the host may use", "[integration]") {
  Sandbox box;
  box.write("s.json", kGpuSweep);
  SECTION("by position among NVML's GPUs") {
    const auto r = run_on_fake_gpus(box, 4, "", "run s.json --db results.db --jobs 2 --gpus 3,2");
    INFO(r.output);
    REQUIRE(r.code == 0);
    const auto seen = visible_per_trial(box);
    CHECK(std::set<std::string>(seen.begin(), seen.end()) ==
          std::set<std::string>{uuid(2), uuid(3)});
  }
  SECTION("under Slurm's binding (CUDA_VISIBLE_DEVICES=5,7), --gpus 1 is GPU 7") {
    const auto r =
        run_on_fake_gpus(box, 4, "CUDA_VISIBLE_DEVICES=5,7", "run s.json --db results.db --gpus 1");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(visible_per_trial(box) == std::multiset<std::string>{"7", "7", "7", "7"});
  }
  SECTION("without --gpus and with --jobs 1 the workers inherit the environment") {
    const auto r =
        run_on_fake_gpus(box, 4, "CUDA_VISIBLE_DEVICES=5,7", "run s.json --db results.db");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(visible_per_trial(box) == std::multiset<std::string>{"5,7", "5,7", "5,7", "5,7"});
  }
}

TEST_CASE("more jobs than GPUs is refused before anything runs", "[integration]") {
  Sandbox box;
  box.write("s.json", kGpuSweep);
  auto r = run_on_fake_gpus(box, 2, "", "run s.json --db results.db --jobs 3");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("--jobs 3 needs a GPU per running trial") &&
                           Contains("2 GPU(s) visible") && Contains("--jobs 2 or fewer"));
  CHECK_FALSE(box.has_tables());
  r = run_on_fake_gpus(box, 2, "", "run s.json --db results.db --gpus 0,5");
  CHECK(r.code == 2);
  CHECK_THAT(r.output, Contains("GPU 5 does not exist"));
}

TEST_CASE("measure.max_memory caps a CUDA trial's device allocator, a CPU trial's address space",
          "[integration]") {
  Sandbox box;
  box.write("s.json", R"({"name": "cap", "workload": "fake_cuda",
    "grid": {"device": ["cuda", "cpu"]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 25, "blocks": 5,
                "max_memory": "2GiB"}})");
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 2);
  const std::string cuda = config_is("device", "'cuda'");
  const std::string cpu = config_is("device", "'cpu'");
  // The plugin capped its allocator at 2 GiB (5% of its 40 GiB device); the
  // worker set no address-space limit, which CUDA's context would exhaust.
  CHECK(metric(box, "device_cap_bytes", cuda) == 2.0 * (1 << 30));
  CHECK(metric(box, "memory_cap_device_bytes", cuda) == 2.0 * (1 << 30));
  CHECK(metric(box, "memory_cap_device_fraction", cuda) == Approx(0.05));
  CHECK(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE " +
                  cuda + " AND m.name = 'memory_cap_address_space_bytes'") == 0);
  // The CPU trial: its address space, and nothing asked of the device.
  CHECK(metric(box, "memory_cap_address_space_bytes", cpu) == 2.0 * (1 << 30));
  CHECK(metric(box, "device_cap_bytes", cpu) == 0);
  CHECK(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE " + cpu +
                  " AND m.name LIKE 'memory_cap_device%'") == 0);
}

TEST_CASE("interleave auto on a GPU takes turns with as many trials as a probe's footprint fits",
          "[integration]") {
  Sandbox box;
  // Three configs of a trial on the fake GPU 1 (37 GiB free), each worker
  // holding 2 GiB by NVML: 80% of the free memory holds 14, so all three take
  // turns. The probe is not a trial of the run.
  box.write("s.json", R"({"name": "auto", "workload": "fake_cuda",
    "base": {"device": "cuda", "spin_ms": 20},
    "grid": {"batch_size": [1, 2, 3]},
    "measure": {"repeats": 1, "warmup_steps": 1, "steps_per_block": 5, "blocks": 5}})");
  const auto r =
      run_on_fake_gpus(box, 2, "FAKE_NVML_PROCESS_PID=workers FAKE_NVML_PROCESS_MEMORY=2147483648",
                       "run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.output, Contains("a short probe measures what one holds on the device"));
  CHECK_THAT(r.output, Contains("interleaved on the GPU: 3 trials at a time") &&
                           Contains("2.00 GiB of GPU 1 by NVML"));
  CHECK(box.count("SELECT count(*) FROM trials") == 3);
  CHECK(box.count("SELECT count(DISTINCT interleave_group) FROM trials "
                  "WHERE interleave_group IS NOT NULL") == 1);
  CHECK(box.count("SELECT count(*) FROM trials WHERE interleave_group IS NULL") == 0);

  // 30 GiB each: one after another, and the run says why.
  Sandbox big;
  big.write("s.json", box.read("s.json"));
  const auto b =
      run_on_fake_gpus(big, 2, "FAKE_NVML_PROCESS_PID=workers FAKE_NVML_PROCESS_MEMORY=32212254720",
                       "run s.json --db results.db");
  INFO(b.output);
  REQUIRE(b.code == 0);
  CHECK_THAT(b.output, Contains("two do not fit on the GPU"));
  CHECK(big.count("SELECT count(*) FROM trials WHERE interleave_group IS NULL") == 3);
}
