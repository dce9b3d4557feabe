// diagnose's classifier on synthetic phase timings, and the sweep it suggests.
#include "analysis/diagnose.hpp"

#include "temp_dir.hpp"

#include <gpusweep/db/sqlite.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace gpusweep::host;
using Catch::Matchers::Contains;
using gpusweep::db::TrialStatus;

namespace {

PhaseBreakdown step(double step_s) {
  PhaseBreakdown b;
  b.step_s = step_s;
  return b;
}

PluginManifest conv_manifest() {
  return PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "restoration", "version": "1.0.0", "unit": "images",
    "params": [
      {"name": "device", "type": "string", "default": "auto", "choices": ["auto", "cpu", "cuda"], "common": true},
      {"name": "batch_size", "type": "int", "default": 16, "min": 1, "max": 64, "common": true},
      {"name": "precision", "type": "string", "default": "fp32", "choices": ["fp32", "bf16", "fp16"], "common": true},
      {"name": "loader_workers", "type": "int", "default": 0, "min": 0, "max": 2, "common": true},
      {"name": "sync_every", "type": "int", "default": 1, "min": 0, "max": 1000, "common": true},
      {"name": "pin_memory", "type": "bool", "default": false, "common": true, "applies": false},
      {"name": "channels_last", "type": "bool", "default": false, "common": true}
    ]})"));
}

}  // namespace

TEST_CASE("input wait and copies over 30% of the step are input-bound", "[host]") {
  PhaseBreakdown b = step(0.100);
  b.input_wait_s = 0.025;
  b.host_to_device_s = 0.010;
  b.forward_s = 0.030;
  b.backward_s = 0.035;
  const Diagnosis d = classify(b);
  CHECK(d.bottleneck == Bottleneck::input);
  CHECK_THAT(d.why, Contains("35%"));
  CHECK(std::string(bottleneck_name(d.bottleneck)) == "input-bound");

  b.input_wait_s = 0.015;  // 25% in all: not input-bound any more
  CHECK(classify(b).bottleneck != Bottleneck::input);
}

TEST_CASE("host syncs over 20% of the step are sync-bound, and counted", "[host]") {
  PhaseBreakdown b = step(0.010);
  b.host_sync_s = 0.003;
  b.host_syncs_per_step = 3;
  b.forward_s = 0.004;
  const Diagnosis d = classify(b);
  CHECK(d.bottleneck == Bottleneck::sync);
  REQUIRE_FALSE(d.notes.empty());
  CHECK_THAT(d.notes.front(), Contains("3.00 host syncs per step"));
}

TEST_CASE("short steps far from the peak are launch/overhead-bound", "[host]") {
  PhaseBreakdown b = step(0.0006);
  b.forward_s = 0.0002;
  b.flops_per_step = 9e6;  // 15 GFLOP/s
  b.peak_flops = 100e9;
  CHECK(classify(b).bottleneck == Bottleneck::overhead);
  CHECK(std::string(bottleneck_name(Bottleneck::overhead)) == "launch/overhead-bound");
}

TEST_CASE("the FLOP/s against the matmul peak tell compute- from memory-bound", "[host]") {
  PhaseBreakdown b = step(0.200);
  b.forward_s = 0.080;
  b.backward_s = 0.100;
  b.optimizer_s = 0.010;
  b.peak_flops = 100e9;
  b.flops_per_step = 14e9;  // 70 GFLOP/s = 70%
  CHECK(classify(b).bottleneck == Bottleneck::compute);
  b.flops_per_step = 2e9;  // 10 GFLOP/s = 10%
  CHECK(classify(b).bottleneck == Bottleneck::memory);
  b.flops_per_step.reset();  // unknown: compute, saying it cannot tell
  const Diagnosis d = classify(b);
  CHECK(d.bottleneck == Bottleneck::compute);
  CHECK_THAT(d.why, Contains("cannot be told apart"));
}

TEST_CASE("a graphed step is not host glue, and is not told to capture a graph again", "[host]") {
  // cuda_graphs: the replay (forward, backward, optimiser) lands outside
  // the phase timers, in the rest of the step.
  PhaseBreakdown b = step(0.010);
  b.cuda = true;
  b.rest_s = 0.009;
  b.device_busy_share = 0.8;
  b.device_busy_source = "kernel time in CUDA's activity records";
  CHECK_THAT(classify(b).why, Contains("host-side glue"));  // as the eager reading had it
  b.graphed = true;
  const Diagnosis graphed = classify(b);
  CHECK_THAT(graphed.why, Contains("replays a CUDA graph") && !Contains("host-side glue"));
  // A device busy a small share of a graphed step: still launch-bound, and
  // the advice no longer names CUDA graphs.
  b.device_busy_share = 0.05;
  const Diagnosis idle = classify(b);
  CHECK(idle.bottleneck == Bottleneck::overhead);
  for (const auto& a : idle.advice) CHECK_THAT(a, !Contains("CUDA graphs"));
  b.graphed = false;
  bool names_graphs = false;
  for (const auto& a : classify(b).advice) names_graphs |= a.find("CUDA graphs") == 0;
  CHECK(names_graphs);
}

TEST_CASE("phase shares come from the stats after warmup less the snapshot", "[host]") {
  const auto snapshot =
      nlohmann::json{{"phase_input_wait_s", 1.0}, {"phase_forward_s", 0.5}, {"host_syncs", 10}};
  const auto final_stats = nlohmann::json{{"phase_input_wait_s", 3.0},
                                          {"phase_forward_s", 1.5},
                                          {"host_syncs", 30},
                                          {"flops_per_step", 1e9}};
  const PhaseBreakdown b = breakdown_from_stats(snapshot, final_stats, /*steps=*/10, /*seconds=*/5);
  CHECK(b.step_s == Approx(0.5));
  CHECK(b.input_wait_s == Approx(0.2));
  CHECK(b.forward_s == Approx(0.1));
  CHECK(b.rest_s == Approx(0.2));
  CHECK(b.host_syncs_per_step == Approx(2));
  CHECK(*b.achieved_flops() == Approx(2e9));
}

TEST_CASE("the suggested grid holds only settings that exist, apply and accept the value",
          "[host]") {
  const auto m = conv_manifest();
  Diagnosis d;
  d.bottleneck = Bottleneck::input;
  const auto config = nlohmann::json{{"device", "cpu"}, {"loader_workers", 0}, {"batch_size", 16}};
  const TrialDevice cpu = trial_device(config, nlohmann::json::object());
  const auto grid = suggest_grid(d, m, config, cpu);
  // Current value first (the baseline); 4 is above the setting's max of 2.
  CHECK(grid.at("loader_workers") == nlohmann::json::array({0, 1, 2}));
  CHECK_FALSE(grid.contains("pin_memory"));  // CPU, and it does not apply here

  d.bottleneck = Bottleneck::sync;
  CHECK(suggest_grid(d, m, config, cpu).at("sync_every") == nlohmann::json::array({1, 10, 100}));
  d.bottleneck = Bottleneck::overhead;
  CHECK(suggest_grid(d, m, config, cpu).at("batch_size") == nlohmann::json::array({16, 32, 64}));
  d.bottleneck = Bottleneck::compute;
  const auto compute = suggest_grid(d, m, config, cpu);
  CHECK(compute.at("precision") == nlohmann::json::array({"fp32", "bf16"}));
  CHECK(compute.at("channels_last") == nlohmann::json::array({false, true}));
}

TEST_CASE("a diagnosed trial: phases per measured step, the peak of its own device, a sweep",
          "[analysis]") {
  SweepSpec spec;
  spec.name = "diagnose-restoration";
  spec.workload = "restoration";
  spec.base = {{"loader_workers", 0}};
  const Json config = {{"device", "auto"},      {"batch_size", 16}, {"loader_workers", 0},
                       {"precision", "fp32"},   {"sync_every", 1},  {"pin_memory", false},
                       {"channels_last", false}};
  gpusweep::db::TrialOutcome outcome;
  outcome.status = TrialStatus::ok;
  for (int64_t i = 0; i < 4; ++i) outcome.blocks.push_back({i, 10, 1.0, 160, 0});
  TrialReadings in;
  in.stats_snapshot = {{"phase_input_wait_s", 1.0}, {"phase_forward_s", 1.0}};
  // 40 measured steps of 0.1 s: 0.06 s of input wait and 0.02 s of forward each.
  in.stats = {{"phase_input_wait_s", 3.4}, {"phase_forward_s", 1.8}};
  in.runtime = {{"cuda_available", false}};
  in.matmul = Json::array(
      {{{"device", "cuda:0"}, {"gflops", 900.0}}, {{"device", "cpu"}, {"gflops", 100.0}}});
  std::string why;
  const auto r = diagnose_trial(spec, conv_manifest(), config, outcome, in, &why);
  REQUIRE(r);
  CHECK(r->breakdown.step_s == Approx(0.1));
  CHECK(r->breakdown.input_wait_s == Approx(0.06));
  CHECK_FALSE(r->breakdown.cuda);                  // auto without CUDA runs on the CPU
  CHECK(r->breakdown.peak_flops == Approx(1e11));  // the CPU's peak, not the GPU's
  CHECK(r->diagnosis.bottleneck == Bottleneck::input);
  CHECK(r->suggested_sweep.at("name") == "restoration_input");
  CHECK(r->suggested_sweep.at("grid").at("loader_workers") == Json::array({0, 1, 2}));
  CHECK_FALSE(r->suggested_sweep.at("base").contains("loader_workers"));

  in.stats = {{"steps", 40}};
  CHECK_FALSE(diagnose_trial(spec, conv_manifest(), config, outcome, in, &why));
  CHECK_THAT(why, Contains("no phase timings"));
}

TEST_CASE(
    "on a GPU, device=auto gets the CUDA settings, and bf16 and tf32 only where Tensor "
    "Cores run them",
    "[analysis]") {
  using nlohmann::json;
  json m_json = json::parse(R"({"name": "w", "version": "1", "unit": "samples", "params": [
      {"name": "device", "type": "string", "default": "auto", "common": true},
      {"name": "precision", "type": "string", "default": "fp32", "choices": ["fp32", "bf16"]},
      {"name": "tf32", "type": "bool", "default": false},
      {"name": "loader_workers", "type": "int", "default": 0, "min": 0, "max": 4},
      {"name": "pin_memory", "type": "bool", "default": false},
      {"name": "non_blocking", "type": "bool", "default": false},
      {"name": "cuda_graphs", "type": "bool", "default": false}]})");
  const auto m = PluginManifest::parse(m_json);
  auto runtime = [](const char* cc) {
    return json{{"cuda_available", true},
                {"devices", {{{"index", 0}, {"compute_capability", cc}}}}};
  };
  const json config = {{"device", "auto"}};
  Diagnosis d;
  d.bottleneck = Bottleneck::input;
  const TrialDevice ampere = trial_device(config, runtime("8.0"));
  REQUIRE(ampere.cuda);
  const json input = suggest_grid(d, m, config, ampere);
  CHECK(input.contains("pin_memory"));
  CHECK(input.contains("non_blocking"));
  d.bottleneck = Bottleneck::compute;
  const json compute = suggest_grid(d, m, config, ampere);
  CHECK(compute.at("precision") == json::array({"fp32", "bf16"}));
  CHECK(compute.at("tf32") == json::array({false, true}));
  // Volta (7.0): no bf16 Tensor Cores, no TF32.
  const json volta = suggest_grid(d, m, config, trial_device(config, runtime("7.0")));
  CHECK_FALSE(volta.contains("precision"));
  CHECK_FALSE(volta.contains("tf32"));
  // A launch-bound step on a GPU: CUDA graphs, where the workload has them.
  d.bottleneck = Bottleneck::overhead;
  CHECK(suggest_grid(d, m, config, ampere).at("cuda_graphs") == json::array({false, true}));
  json without = m_json;
  without["params"].erase(without["params"].size() - 1);
  CHECK_FALSE(
      suggest_grid(d, PluginManifest::parse(without), config, ampere).contains("cuda_graphs"));
  // auto where CUDA is not available: a CPU trial, no CUDA settings.
  d.bottleneck = Bottleneck::input;
  const json cpu =
      suggest_grid(d, m, config, trial_device(config, json{{"cuda_available", false}}));
  CHECK_FALSE(cpu.contains("pin_memory"));
  d.bottleneck = Bottleneck::overhead;
  CHECK_FALSE(suggest_grid(d, m, config, trial_device(config, json{{"cuda_available", false}}))
                  .contains("cuda_graphs"));
}

TEST_CASE("a data-parallel step waiting over 30% for its all-reduce is communication-bound",
          "[host]") {
  PhaseBreakdown b = step(0.100);
  b.forward_s = 0.020;
  b.backward_s = 0.075;  // of which the exposed all-reduce
  b.comm_exposed_s = 0.035;
  b.input_wait_s = 0.031;  // input-bound too, but the ranks wait longer on each other
  const Diagnosis d = classify(b);
  CHECK(d.bottleneck == Bottleneck::communication);
  CHECK(std::string(bottleneck_name(d.bottleneck)) == "communication-bound");
  CHECK_THAT(d.why, Contains("35%"));

  b.comm_exposed_s = 0.025;  // 25%: a note, not the verdict
  const Diagnosis lower = classify(b);
  CHECK(lower.bottleneck == Bottleneck::input);
  CHECK_THAT(lower.notes.back(), Contains("all-reduce not hidden behind backward: 25%"));

  // What to sweep: settings the workload has that put more compute behind
  // each all-reduce, or fewer ranks.
  const auto m = PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "restoration", "version": "1.0.0", "unit": "images",
    "params": [
      {"name": "batch_size", "type": "int", "default": 16, "min": 1, "max": 64, "common": true},
      {"name": "grad_accum", "type": "int", "default": 1, "min": 1, "max": 8, "common": true},
      {"name": "world_size", "type": "int", "default": 1, "min": 1, "max": 8, "common": true},
      {"name": "dp_bucket_mb", "type": "float", "default": 25, "min": 0.001, "max": 4096, "common": true}
    ]})"));
  const auto config = nlohmann::json{{"device", "cpu"}, {"batch_size", 16}, {"world_size", 2}};
  const auto grid = suggest_grid(d, m, config, trial_device(config, nlohmann::json::object()));
  CHECK(grid.at("batch_size") == nlohmann::json::array({16, 32, 64}));
  CHECK(grid.at("grad_accum") == nlohmann::json::array({1, 2, 4}));
  CHECK(grid.at("world_size") == nlohmann::json::array({2, 1}));
  CHECK(grid.at("dp_bucket_mb").size() == 3);
}

TEST_CASE("a data-parallel step's communication is the least any rank waited", "[host]") {
  // Rank 0 waited 3 s in all-reduce over the measured steps, the straggler
  // 1 s: the other 2 s were waiting for it, not communicating.
  const nlohmann::json snapshot = {{"dp_comm_exposed_s", 0.5}};
  const nlohmann::json final_stats = {
      {"dp_comm_exposed_s", 3.5}, {"dp_comm_exposed_measured_s", 1.0}, {"phase_backward_s", 6.0}};
  const PhaseBreakdown b = breakdown_from_stats(snapshot, final_stats, 100, 10.0);
  CHECK(b.comm_exposed_s == Approx(0.01));
  // Without the ranks' summary: rank 0's own wait since warmup.
  const PhaseBreakdown own =
      breakdown_from_stats(snapshot, {{"dp_comm_exposed_s", 3.5}}, 100, 10.0);
  CHECK(own.comm_exposed_s == Approx(0.03));
}

namespace {

// The diagnose trials of the first H100 run, as a database: the fixture's
// SQL (tests/fixtures/records/h100_diag.sql) loaded into a scratch file.
struct H100Records {
  gpusweep::test::TempDir dir{"h100_diag"};
  std::string path = dir.file("diag.db");
  H100Records() {
    std::ifstream in(std::string(GPUSWEEP_FIXTURE_DIR) + "/records/h100_diag.sql");
    REQUIRE(in);
    std::stringstream sql;
    sql << in.rdbuf();
    gpusweep::db::Connection(path, gpusweep::db::Connection::Mode::read_write).exec(sql.str());
  }
  std::optional<DiagnoseReport> diagnose(int64_t trial, std::optional<double> peak_gflops = {}) {
    gpusweep::db::Store store(path, gpusweep::db::Connection::Mode::read_only);
    DiagnosedTrial t = load_diagnosed_trial(store, trial);
    REQUIRE(t.status == TrialStatus::ok);
    if (peak_gflops) t.view.stats[kMatmulPeakCuda] = *peak_gflops;
    std::string why;
    auto r = diagnose_record(t.workload, t.view, t.throughput, t.unit, nullptr, &why);
    INFO(why);
    REQUIRE(r);
    return r;
  }
};

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

}  // namespace

TEST_CASE("the H100's dqn trial is launch/overhead-bound (host-bound), with CUDA graphs advised",
          "[analysis]") {
  H100Records records;
  // Recorded before the end-of-warmup totals were kept: whole-trial phases,
  // NVML's 6% over the measured blocks, the host at 99% of a core.
  const auto r = records.diagnose(1);
  CHECK(r->breakdown.cuda);
  CHECK(r->breakdown.approximate);
  CHECK(r->breakdown.step_s == Approx(0.14296 / 50).epsilon(1e-3));
  REQUIRE(r->breakdown.device_busy_share);
  CHECK(*r->breakdown.device_busy_share == Approx(0.06));
  CHECK(r->diagnosis.bottleneck == Bottleneck::overhead);
  CHECK_THAT(r->diagnosis.why, Contains("host-bound"));
  CHECK(any_contains(r->diagnosis.advice, "CUDA graphs"));
  // Warmup's one-off costs inflate the compute phases and the first sync
  // (forward alone 162% of a step when spread over every step): they are
  // scaled into the step beside the steady input, and the syncs per step,
  // whose count includes setup's and evaluation's, are not claimed.
  const PhaseBreakdown& b = r->breakdown;
  CHECK(b.input_wait_s + b.host_to_device_s + b.forward_s + b.backward_s + b.optimizer_s +
            b.host_sync_s + b.rest_s ==
        Approx(b.step_s));
  CHECK(b.input_wait_s / b.step_s == Approx(0.0085348 / 60 / (0.14296 / 50)).epsilon(0.01));
  CHECK(b.host_syncs_per_step == 0);
  // Without the plugin, no sweep: the advice is text.
  CHECK(r->suggested_sweep.is_null());
  CHECK_FALSE(r->manifest_known);

  // With doctor's float32 matmul peak (51.4 TFLOP/s) and no NVML figure, the
  // FLOPs alone tell it: 3 GFLOP/s is a sliver of the peak.
  H100Records again;
  {
    gpusweep::db::Connection c(again.path, gpusweep::db::Connection::Mode::read_write);
    c.exec("DELETE FROM metrics WHERE name LIKE 'monitor_gpu%'");
  }
  const auto f = again.diagnose(1, 51400.0);
  CHECK_FALSE(f->breakdown.device_busy_share);
  CHECK(f->breakdown.peak_fraction() == Approx(3.08e9 / 51.4e12).epsilon(0.01));
  CHECK(f->diagnosis.bottleneck == Bottleneck::overhead);
  CHECK(any_contains(f->diagnosis.advice, "CUDA graphs"));
}

TEST_CASE("the H100's restoration trial is input-bound from its whole-trial totals", "[analysis]") {
  H100Records records;
  const auto r = records.diagnose(2);
  CHECK(r->breakdown.approximate);
  // Input wait and copies are steady from the first step: their recorded
  // whole-trial totals over 60 steps against the recorded blocks' step
  // (0.2469 s over 50 steps) give 43%, the exact diagnosis made on the H100.
  const double input_per_step = (0.106761721 + 0.021664034) / 60;
  CHECK((r->breakdown.input_wait_s + r->breakdown.host_to_device_s) / r->breakdown.step_s ==
        Approx(input_per_step / (0.246854513 / 50)));
  CHECK(r->diagnosis.bottleneck == Bottleneck::input);
  CHECK(r->diagnosis.advice.empty());
}

TEST_CASE("a missing trial is refused naming it", "[analysis]") {
  H100Records records;
  gpusweep::db::Store store(records.path, gpusweep::db::Connection::Mode::read_only);
  CHECK_THROWS_WITH(load_diagnosed_trial(store, 99), Contains("--trial 99: no such trial"));
}

TEST_CASE("a device busy half the step or more is not called launch-bound", "[analysis]") {
  PhaseBreakdown b = step(0.010);
  b.cuda = true;
  b.forward_s = 0.004;
  b.backward_s = 0.005;
  b.device_busy_share = 0.2;
  b.device_busy_source = "test";
  b.host_cpu_cores = 0.5;
  Diagnosis d = classify(b);
  CHECK(d.bottleneck == Bottleneck::overhead);
  CHECK_THAT(d.why, !Contains("host-bound"));  // the host is not saturated
  b.device_busy_share = 0.9;
  d = classify(b);
  CHECK(d.bottleneck == Bottleneck::compute);
  CHECK(d.advice.empty());
  // FLOPs with no peak: the why never says the plugin reports none.
  b.flops_per_step = 1e9;
  d = classify(b);
  CHECK_THAT(d.why, !Contains("reports no FLOPs"));
  CHECK_THAT(d.why, Contains("give --peak"));
}

TEST_CASE("the CPU is suggested for a launch-bound step its peak would run faster", "[analysis]") {
  PhaseBreakdown b = step(0.003);
  b.cuda = true;
  b.device_busy_share = 0.05;
  b.device_busy_source = "test";
  b.flops_per_step = 8.8e6;  // dqn's step
  b.cpu_peak_flops = 1e12;
  CHECK(any_contains(classify(b).advice, "try device=cpu"));
  b.flops_per_step = 3e10;  // restoration's: 0.3 s at a tenth of that peak
  CHECK_FALSE(any_contains(classify(b).advice, "try device=cpu"));
}
