// From a worker's events and exit to a trial outcome and summary.
#include "run/collector.hpp"

#include "spec/stats.hpp"

#include "test_manifest.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <map>
#include <set>

using namespace gpusweep;
using gpusweep::db::TrialStatus;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

TrialCollector feed(const PluginManifest& m, const MeasureSpec& spec,
                    const std::vector<std::string>& lines) {
  TrialCollector c(m, spec);
  for (const auto& l : lines) c.on_line(l);
  return c;
}

const std::vector<std::string> kOkRun = {
    R"({"event":"hello","pid":1})",
    R"({"event":"loaded","abi":"1.0","manifest":{},"runtime":{"torch_version":"1.13.0","threads":2}})",
    R"({"event":"phase","phase":"setup"})",
    R"({"event":"runtime","runtime":{"torch_version":"1.13.0","threads":2,"blas":"openblas"},"setup_s":0.25})",
    // Warmup waited 0.3 s for input: not the blocks' share.
    R"({"event":"stats_snapshot","at_step":10,"stats":{"input_wait_s":0.3}})",
    R"({"event":"block","idx":0,"steps":10,"seconds":1.0,"samples":100,"secondary_samples":10})",
    R"({"event":"block","idx":1,"steps":10,"seconds":0.5,"samples":100,"secondary_samples":10})",
    R"({"event":"block","idx":2,"steps":10,"seconds":2.0,"samples":100,"secondary_samples":10})",
    R"({"event":"block","idx":3,"steps":10,"seconds":1.0,"samples":100,"secondary_samples":10})",
    R"({"event":"block","idx":4,"steps":10,"seconds":1.0,"samples":100,"secondary_samples":10})",
    R"({"event":"eval","at_step":60,"seconds":0.1,"metrics":{"mean_return":120.5,"random_policy_return":22}})",
    R"({"event":"stats","stats":{"peak_memory_bytes":1048576,"input_wait_s":0.85}})",
    R"({"event":"result","status":"ok","steps":60})"};

}  // namespace

TEST_CASE("an ok run yields a summary over the block samples", "[host][collector]") {
  const auto m = test::dqn_like_manifest();
  MeasureSpec spec;
  spec.warmup_steps = 10;
  spec.steps_per_block = 10;
  spec.blocks = 5;
  auto c = feed(m, spec, kOkRun);
  ExitInfo exit;
  exit.exit_code = 0;
  const auto o = c.finish(exit, "", 0);
  CHECK(o.status == TrialStatus::ok);
  CHECK_FALSE(o.error);
  REQUIRE(o.summary);
  const auto& s = *o.summary;
  CHECK(s.blocks == 5);
  CHECK(s.unit == "updates");
  CHECK(s.throughput_median == Approx(100));  // 50, 100, 100, 100, 200 per second
  CHECK(s.throughput_min == Approx(50));
  CHECK(s.throughput_max == Approx(200));
  CHECK(s.step_time_median_s == Approx(0.1));
  CHECK(*s.secondary_throughput_median == Approx(10));
  CHECK(*s.peak_memory_bytes == 1048576);
  // The plugin's total (0.85 s) less warmup's (0.3 s), over the blocks' 5.5 s.
  CHECK(*s.input_wait_fraction == Approx(0.55 / 5.5));
  CHECK(*s.quality == 120.5);
  CHECK(*s.quality_reference == 22);
  CHECK(*s.setup_s == 0.25);
  CHECK(o.blocks.size() == 5);
  REQUIRE(o.environment);
  CHECK(o.environment->blas == "openblas");
  CHECK(o.environment->threads == 2);
  CHECK(o.environment->fingerprint.size() == 16);
  // eval metrics and stats are stored as metric samples
  CHECK(o.metrics.size() == 4);
}

TEST_CASE("plugin statuses, signals, timeouts and interrupts map to trial statuses",
          "[host][collector]") {
  const auto m = test::dqn_like_manifest();
  MeasureSpec spec;
  ExitInfo normal;
  normal.exit_code = 0;

  auto skipped = feed(
      m, spec,
      {R"({"event":"phase","phase":"setup"})",
       R"({"event":"result","status":"skipped","phase":"setup","message":"fp16 needs CUDA"})"});
  auto o = skipped.finish(normal, "", 0);
  CHECK(o.status == TrialStatus::skipped);
  CHECK(*o.error == "fp16 needs CUDA");
  CHECK_FALSE(o.summary);

  auto oom =
      feed(m, spec,
           {R"({"event":"result","status":"oom","phase":"measure","message":"can't allocate"})"});
  CHECK(oom.finish(normal, "", 0).status == TrialStatus::oom);

  auto failed =
      feed(m, spec, {R"({"event":"result","status":"failed","phase":"measure","message":"boom"})"});
  o = failed.finish(normal, "", 0);
  CHECK(o.status == TrialStatus::failed);
  CHECK_THAT(*o.error, Contains("boom") && Contains("measure"));

  auto crashed = feed(m, spec, {R"({"event":"phase","phase":"measure"})", "garbage line {"});
  ExitInfo sig;
  sig.signal = SIGSEGV;
  o = crashed.finish(sig, "some output\nSegfault here\n", 28);
  CHECK(o.status == TrialStatus::crashed);
  CHECK_THAT(*o.error, Contains("SIGSEGV") && Contains("measure") && Contains("Segfault here") &&
                           Contains("1 malformed protocol lines"));
  CHECK(*o.signal == SIGSEGV);
  CHECK(o.stderr_bytes == 28);

  ExitInfo exit0;
  exit0.exit_code = 0;
  o = feed(m, spec, {R"({"event":"phase","phase":"warmup"})"}).finish(exit0, "", 0);
  CHECK(o.status == TrialStatus::crashed);
  CHECK_THAT(*o.error, Contains("exited with code 0 before reporting a result"));

  ExitInfo timeout;
  timeout.signal = SIGKILL;
  timeout.timed_out = true;
  timeout.timeout_s = 2;
  o = feed(m, spec, {R"({"event":"phase","phase":"measure"})"}).finish(timeout, "", 0);
  CHECK(o.status == TrialStatus::timeout);
  CHECK_THAT(*o.error, Contains("timeout_s=2") && Contains("measure"));

  ExitInfo interrupted;
  interrupted.signal = SIGKILL;
  interrupted.interrupted = true;
  CHECK(feed(m, spec, {}).finish(interrupted, "", 0).status == TrialStatus::interrupted);

  // A SIGKILL nobody on the host sent, while the cgroup's OOM killer
  // killed: oom with the reason. Without OOM kills it stays a crash.
  ExitInfo oom_killed;
  oom_killed.signal = SIGKILL;
  oom_killed.oom_kills = 1;
  o = feed(m, spec, {R"({"event":"phase","phase":"measure"})"}).finish(oom_killed, "", 0);
  CHECK(o.status == TrialStatus::oom);
  CHECK_THAT(*o.error, Contains("OOM killer") && Contains("during measure"));
  oom_killed.oom_kills = 0;
  CHECK(feed(m, spec, {}).finish(oom_killed, "", 0).status == TrialStatus::crashed);
  ExitInfo segv_meanwhile = sig;  // another signal: not the OOM killer's
  segv_meanwhile.oom_kills = 1;
  CHECK(feed(m, spec, {}).finish(segv_meanwhile, "", 0).status == TrialStatus::crashed);

  // "ok" without blocks is not a measurement.
  CHECK(feed(m, spec, {R"({"event":"result","status":"ok"})"}).finish(normal, "", 0).status ==
        TrialStatus::failed);
}

TEST_CASE("blocks timed by the device's clock too say how much of the block the device worked",
          "[host][collector]") {
  const auto m = test::dqn_like_manifest();
  MeasureSpec spec;
  auto c = feed(
      m, spec,
      {R"({"event":"block","idx":0,"steps":10,"seconds":1.0,"samples":100,"device_seconds":0.98})",
       R"({"event":"block","idx":1,"steps":10,"seconds":1.0,"samples":100,"device_seconds":0.6})",
       R"({"event":"result","status":"ok","steps":20})"});
  ExitInfo exit;
  exit.exit_code = 0;
  const auto o = c.finish(exit, "", 0);
  REQUIRE(o.blocks.size() == 2);
  CHECK(*o.blocks[1].device_seconds == 0.6);
  std::map<std::string, double> stats;
  for (const auto& s : o.metrics) stats[s.name] = s.value;
  CHECK(stats.at("device_time_fraction") == Approx(0.79));
  // 0.6 s of 1.0 s: the device idled 40% of the block, beyond the tolerance.
  CHECK(stats.at("clock_disagreeing_blocks") == 1);

  // On the CPU no block has a device time, and no such statistic appears.
  auto cpu = feed(m, spec,
                  {R"({"event":"block","idx":0,"steps":10,"seconds":1.0,"samples":100})",
                   R"({"event":"result","status":"ok","steps":10})"});
  for (const auto& s : cpu.finish(exit, "", 0).metrics) CHECK(s.name != "device_time_fraction");
}

TEST_CASE("every stat the host writes of a trial is in its stats table", "[host][collector]") {
  // Each event the collector turns into a stat of its own, with every field.
  const auto m = test::dqn_like_manifest();
  MeasureSpec spec;
  spec.warmup_steps = 1;
  spec.steps_per_block = 10;
  spec.blocks = 2;
  std::vector<std::string> lines = kOkRun;
  lines.insert(lines.begin() + 4,
               R"({"event":"warmup_done","seconds":0.4,"first_step_s":0.2,"block_steps":10,)"
               R"("gpu_busy_share":0.5,"windows":[0.1,0.1],"stable":true})");
  lines.insert(lines.begin() + 4,
               R"({"event":"memory_cap","kind":"device","cap_bytes":1e9,"fraction":0.5})");
  lines.insert(lines.begin() + 4, R"({"event":"probe","matmul":[{"device":"cpu","gflops":9}]})");
  lines.insert(lines.end() - 1,
               R"({"event":"target","reached":false,"time_s":3,"diverged":true,"capped":true,)"
               R"("train_s":3,"cap_s":4,"eval_s":1,"evaluations":2,"at_step":60})");
  lines.insert(lines.end() - 1, R"({"event":"block","idx":5,"steps":10,"seconds":1.0,)"
                                R"("samples":100,"device_seconds":0.5})");
  lines.insert(lines.end() - 1, R"({"event":"stats","stats":{"dp_comm_exposed_measured_s":0.1,)"
                                R"("dp_imbalance_s":0.1}})");
  auto c = feed(m, spec, lines);
  c.add_stat(host_stat::seed, 7);
  ExitInfo exit;
  exit.exit_code = 0;
  const auto o = c.finish(exit, "", 0);
  // The plugin's own stats are stored under its names; the rest are the host's.
  const std::set<std::string> plugins = {"peak_memory_bytes", "input_wait_s",
                                         "dp_comm_exposed_measured_s", "dp_imbalance_s"};
  std::set<std::string> written;
  for (const auto& s : o.metrics) {
    if (s.kind != "stat" || plugins.count(s.name) != 0U || s.name.rfind("warmup_end.", 0) == 0) {
      continue;
    }
    written.insert(s.name);
    INFO(s.name);
    CHECK(find_host_stat(s.name) != nullptr);
  }
  // The events above did reach each kind of host stat.
  for (const char* name :
       {host_stat::target_time_s, host_stat::target_capped, host_stat::gpu_busy_share,
        host_stat::memory_cap_device_bytes, host_stat::device_time_fraction,
        host_stat::dp_comm_share, host_stat::matmul_peak_gflops_cpu, host_stat::seed}) {
    INFO(name);
    CHECK(written.count(name) == 1);
  }
}
