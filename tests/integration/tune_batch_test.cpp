// tune-batch, monitoring, doctor and diagnose through the real binary, on the
// memhog fixture (memory grows with batch_size; no LibTorch, so fast).
#include "harness.hpp"

#include <cstdlib>

using namespace gpusweep;
using Catch::Matchers::Contains;
using test::Sandbox;

namespace {
// 8 MiB per sample under a 100 MiB cap: batches up to 12 fit, 13 does not.
// A 10 ms wait a step makes throughput grow with the batch whatever the load,
// so that the fastest size that fits (the recommendation) is the largest.
const char* kHog =
    "tune-batch memhog --max-memory 100MiB --margin 0 --set step_sleep_us=10000 --db results.db";

std::vector<int64_t> probed(const Sandbox& box, const std::string& status) {
  db::Connection c(box.db(), db::Connection::Mode::read_only);
  auto st = c.prepare(
      "SELECT json_extract(config_json, '$.batch_size') FROM trials "
      "WHERE status = ? AND repeat = 0 ORDER BY ordinal");
  st.bind(1, status);
  std::vector<int64_t> out;
  while (st.step()) out.push_back(st.get_int(0));
  return out;
}
}  // namespace

TEST_CASE("tune-batch power mode doubles until out-of-memory and re-verifies", "[integration]") {
  Sandbox box;
  const auto r = box.gpusweep(std::string(kHog) + " --mode power");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(probed(box, "ok") == std::vector<int64_t>{1, 2, 4, 8});
  CHECK(probed(box, "oom") == std::vector<int64_t>{16});
  CHECK_THAT(r.output, Contains("largest that fits: 8 (first failure: 16)"));
  CHECK_THAT(r.output, Contains("use it with: --set batch_size=8"));
  // The verification is a trial of its own, with the full protocol.
  CHECK(
      box.count("SELECT count(*) FROM trials t JOIN trial_summary s ON s.trial_id = t.id "
                "WHERE t.repeat = 1 AND t.status = 'ok' AND s.blocks = 5 AND s.steps_per_block = 5 "
                "AND json_extract(t.config_json, '$.batch_size') = 8") == 1);
  CHECK(box.text("SELECT name FROM sweeps") == "tune-batch-memhog");
  CHECK(box.text("SELECT error FROM trials WHERE status = 'oom'").find("allocation failed") !=
        std::string::npos);
}

TEST_CASE("tune-batch binsearch bisects to the exact largest fit", "[integration]") {
  Sandbox box;
  const auto r = box.gpusweep(std::string(kHog) + " --mode binsearch");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(probed(box, "ok") == std::vector<int64_t>{1, 2, 4, 8, 12});
  CHECK(probed(box, "oom") == std::vector<int64_t>{16, 14, 13});
  CHECK_THAT(r.output, Contains("largest that fits: 12 (first failure: 13)"));
  CHECK_THAT(r.output, Contains("throughput curve"));

  // A margin is taken off: at most floor(12 x 0.75) = 9. Throughput still
  // rises at 12, so 9 itself is verified and, fastest of the sizes up to 9,
  // recommended.
  Sandbox margin;
  const auto m = margin.gpusweep(
      "tune-batch memhog --max-memory 100MiB --mode binsearch --margin 0.25 --max 12 "
      "--set step_sleep_us=10000 --db results.db");
  INFO(m.output);
  REQUIRE(m.code == 0);
  CHECK(probed(margin, "ok") == std::vector<int64_t>{1, 2, 4, 8, 12});
  CHECK(probed(margin, "oom").empty());
  CHECK_THAT(m.output, Contains("reached --max") && Contains("--set batch_size=9"));
}

TEST_CASE("tune-batch --format json prints one document on stdout, progress on stderr",
          "[integration]") {
  Sandbox box;
  const auto r = test::run_shell("cd '" + box.path("") + "' && GPUSWEEP_PLUGIN_PATH='" +
                                 GPUSWEEP_TEST_PLUGIN_DIR + "' '" + GPUSWEEP_BIN + "' " + kHog +
                                 " --format json 2>/dev/null");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const auto doc = nlohmann::json::parse(r.output);
  CHECK(doc.at("largest_fit") == 8);
  CHECK(doc.at("first_failure") == 16);
  CHECK(doc.at("recommended") == 8);
  REQUIRE(doc.at("probes").size() == 6);  // 1 2 4 8 16, then the verification of 8
  CHECK(doc.at("probes")[4].at("status") == "oom");
  CHECK(doc.at("probes")[5].at("verify") == true);
  CHECK(doc.at("probes")[5].at("trial_id") == 6);
}

TEST_CASE("tune-batch refuses bad arguments with exit code 2", "[integration]") {
  Sandbox box;
  CHECK(box.gpusweep("tune-batch memhog --mode linear").code == 2);
  CHECK(box.gpusweep("tune-batch memhog --max-memory lots").code == 2);
  CHECK(box.gpusweep("tune-batch memhog --set batch_size=4").code == 2);
  CHECK(box.gpusweep("tune-batch memhog --min 8 --max 4").code == 2);
  CHECK(box.gpusweep("tune-batch nosuch").code == 2);
  const auto help = box.gpusweep("tune-batch --help");
  CHECK(help.code == 0);
  CHECK_THAT(help.output, Contains("--max-memory") && Contains("binsearch"));
  CHECK(box.gpusweep("diagnose memhog --matmul-seconds 99").code == 2);
  CHECK(box.gpusweep("doctor --matmul-seconds -1").code == 2);
}

TEST_CASE("without NVML, trials record CPU figures and are unaffected", "[integration]") {
  Sandbox box;
  box.write("s.json", R"({"name": "mon", "workload": "memhog",
    "base": {"batch_size": 2},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 200, "blocks": 5}})");
  // No NVIDIA library here (and none named): CPU monitoring only.
  const auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 1);
  CHECK(box.count("SELECT count(*) FROM trial_summary WHERE throughput_median > 0") == 1);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE kind = 'stat' AND "
                  "name = 'monitor_cpu_util_mean' AND value > 0") == 1);
  // The worker holds its 16 MiB: the peak RSS sees them.
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name = 'monitor_rss_peak_bytes' "
                  "AND value > 16 * 1048576") == 1);
  CHECK(box.count("SELECT count(*) FROM metrics WHERE name LIKE 'monitor_gpu%'") == 0);
}

TEST_CASE("with NVML, a GPU trial records its own GPU's figures and a CPU trial none",
          "[integration]") {
  Sandbox box;
  // fake_cuda reports one CUDA device at PCI bus 0x65 (NVML's device 1, as
  // under CUDA_VISIBLE_DEVICES=1); memhog runs on the CPU.
  box.write("s.json", R"({"name": "mon", "workload": "fake_cuda",
    "grid": {"device": ["cuda:0", "cpu"]},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 400, "blocks": 5}})");
  box.write("cpu.json", R"({"name": "cpu", "workload": "memhog",
    "base": {"batch_size": 1},
    "measure": {"repeats": 1, "warmup_steps": 2, "steps_per_block": 20000, "blocks": 5}})");
  const std::string cmd = "cd '" + box.path("") + "' && export GPUSWEEP_NVML_LIBRARY='" +
                          GPUSWEEP_FAKE_NVML + "' GPUSWEEP_PLUGIN_PATH='" +
                          GPUSWEEP_TEST_PLUGIN_DIR + "' && '" + GPUSWEEP_BIN +
                          "' run s.json --db results.db > out.txt 2>&1 && '" + GPUSWEEP_BIN +
                          "' run cpu.json --db results.db >> out.txt 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  INFO(box.read("out.txt"));
  CHECK(box.count("SELECT count(*) FROM trials WHERE status = 'ok'") == 3);
  // The cuda:0 trial: the fake's device 1 (95% busy, 3 GiB used), never
  // device 0 (87%, 12 GiB), sampled over its measured phase.
  const std::string gpu_trial =
      "SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
      "json_extract(t.config_json, '$.device') = 'cuda:0' AND ";
  CHECK(box.count(gpu_trial + "m.name = 'monitor_gpu_index' AND m.value = 1") == 1);
  CHECK(box.count(gpu_trial + "m.name = 'monitor_gpu_device_util_mean' AND m.value = 95") == 1);
  CHECK(box.count(gpu_trial + "m.name = 'monitor_gpu_device_memory_used_peak_bytes' AND m.value = "
                              "3 * 1073741824") == 1);
  // The CPU trials, with NVML present: no GPU figures at all.
  CHECK(box.count("SELECT count(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE "
                  "m.name LIKE 'monitor_gpu%' AND (json_extract(t.config_json, '$.device') = "
                  "'cpu' OR t.workload = 'memhog')") == 0);
}

TEST_CASE("doctor lists the plugins and fails when one does not load", "[integration]") {
  Sandbox box;
  // The fixture folder holds plugins that do not load on purpose.
  const auto r = box.gpusweep("doctor --matmul-seconds 0");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("memhog") && Contains("bad_major") && Contains("problem"));
  CHECK_THAT(r.output, Contains("nvml") && Contains("cores"));
}
