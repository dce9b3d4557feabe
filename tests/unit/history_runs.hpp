// Runs of a workload written through the store, for the tests of
// `gpusweep history` and the views of it (the listing, the HTML page, serve).
#pragma once

#include <gpusweep/db/store.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace gpusweep::test {

struct RunSpec {
  double level = 1000;  // each block's throughput, before its wobble
  std::string hash = "a411f1e6e63d4649";
  std::string torch = "2.15.0";
  db::SweepStatus status = db::SweepStatus::finished;
  std::string workload = "noop";
  db::RunKind kind = db::RunKind::sweep;
};

inline db::EnvironmentInfo environment(const std::string& torch) {
  db::EnvironmentInfo e;
  e.fingerprint = "f" + torch;
  e.hostname = "box";
  e.cpu_model = "cpu";
  e.torch_version = torch;
  e.gpusweep_version = "0.1.0";
  e.details_json = R"({"runtime": {"cuda": {"torch_cuda": "13.2", "driver_cuda": ""}}})";
  return e;
}

// One run of two configs (batch_size 16 and 32), 3 repeats of 5 blocks each;
// config 32 runs at twice the level.
inline void write_run(db::Store& store, int index, const RunSpec& r) {
  db::SweepRecord s;
  s.name = "nightly";
  s.workload = r.workload;
  s.kind = r.kind;
  s.spec_json = R"({"name": "nightly", "workload": "noop", "grid": {"batch_size": [16, 32]}})";
  s.spec_hash = "h";
  std::vector<db::TrialPlan> plans;
  for (int64_t i = 0; i < 6; ++i) {
    db::TrialPlan p;
    p.ordinal = i;
    p.config_index = i % 2;
    p.repeat = i / 2;
    p.workload = r.workload;
    p.plugin_version = "1.1.0";
    p.plugin_path = "/plugins/gpusweep_noop.so";
    p.plugin_hash = r.hash;
    p.config_json = i % 2 == 0 ? R"({"batch_size": 16})" : R"({"batch_size": 32})";
    p.config_hash = std::to_string(i % 2);
    plans.push_back(p);
  }
  const int64_t id = store.create_sweep(s, plans);
  for (const auto& t : store.trials(id)) {
    const double level = r.level * (t.plan.config_index == 0 ? 1 : 2) *
                         (1 + 0.004 * std::sin(index * 1.7 + static_cast<double>(t.plan.repeat)));
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    o.environment = environment(r.torch);
    db::Summary m;
    m.unit = "samples";
    m.throughput_median = level;
    o.summary = m;
    for (int64_t b = 0; b < 5; ++b) {
      o.blocks.push_back({b, 10, 1.0, level * (1 + 0.001 * static_cast<double>(b - 2)), 0, {}, {}});
    }
    store.commit_trial(t.id, o);
  }
  store.set_sweep_status(id, r.status);
}

}  // namespace gpusweep::test
