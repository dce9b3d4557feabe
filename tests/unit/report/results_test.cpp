// The results table's notes about a trial.
#include "report/results.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;

TEST_CASE("a measured window too short for an NVML sample is a note on its trial's row",
          "[report]") {
  test::TempDir dir("results_notes");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  db::SweepRecord s;
  s.name = "r";
  s.workload = "noop";
  s.spec_json = R"({"name": "r", "workload": "noop", "grid": {"batch_size": [16, 32]}})";
  s.spec_hash = "h";
  std::vector<db::TrialPlan> plans;
  for (int64_t config = 0; config < 2; ++config) {
    db::TrialPlan p;
    p.ordinal = config;
    p.config_index = config;
    p.workload = "noop";
    p.plugin_version = "1";
    p.config_json = config == 0 ? R"({"batch_size": 16})" : R"({"batch_size": 32})";
    p.config_hash = std::to_string(config);
    plans.push_back(p);
  }
  const int64_t id = store.create_sweep(s, plans);
  for (const auto& t : store.trials(id)) {
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    db::Summary m;
    m.unit = "samples";
    m.throughput_median = 100;
    o.summary = m;
    o.metrics = {{"stat", 0, "monitor_gpu_util_sample_period_s", 1 / 6.0}};
    // Config 1's window held none of the driver's samples; config 0's did.
    if (t.plan.config_index == 1) {
      o.metrics.push_back({"stat", 0, "monitor_gpu_util_window_too_short", 0.21});
    }
    store.commit_trial(t.id, o);
  }
  const std::string text = results_table(*store.sweep(id), {stored_trials(store, id), {}});
  const std::string note =
      "GPU utilisation: measured window 0.21 s held no NVML sample (driver period 0.17 s)";
  const auto at = text.find(note);
  REQUIRE(at != std::string::npos);
  CHECK(text.find(note, at + 1) == std::string::npos);  // the one trial's row only
  // The row is config 2's (batch 32).
  const auto row = text.rfind('\n', at);
  CHECK(text.substr(row, at - row).find("32") != std::string::npos);
}
