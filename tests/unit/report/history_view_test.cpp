// `gpusweep history` on a database of several runs written through the
// store: what the command reads, analyses and prints as JSON
// (analysis/history.hpp, report/history_view.hpp).
#include "report/history_view.hpp"
#include "analysis/history.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace gpusweep;
using namespace gpusweep::host;

namespace {

struct RunSpec {
  double level = 1000;  // each block's throughput, before its wobble
  std::string hash = "a411f1e6e63d4649";
  std::string torch = "2.15.0";
  std::string status = "finished";
  std::string workload = "noop";
};

db::EnvironmentInfo environment(const std::string& torch) {
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
void write_run(db::Store& store, int index, const RunSpec& r) {
  db::SweepRecord s;
  s.name = "nightly";
  s.workload = r.workload;
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

}  // namespace

TEST_CASE(
    "history of a database of several runs: series by config with the step and the "
    "changes marked",
    "[history]") {
  test::TempDir dir("history_view");
  const std::string path = dir.file("h.db");
  {
    db::Store store(path, db::Connection::Mode::read_write);
    for (int i = 0; i < 10; ++i) {
      RunSpec r;
      // From run 6 on a new build 10% slower; from run 8 a new torch.
      if (i >= 5) r.level = 900, r.hash = "0badc0de00000000";
      if (i >= 7) r.torch = "2.16.0";
      write_run(store, i, r);
    }
    RunSpec interrupted;
    interrupted.level = 10;
    interrupted.status = "interrupted";
    write_run(store, 10, interrupted);
    RunSpec other;
    other.workload = "marl";
    write_run(store, 11, other);
  }
  db::Store store(path, db::Connection::Mode::read_only);
  HistoryFilter filter;
  filter.workload = "noop";
  const Json out = Json::parse(history_listing(
      history_series(read_history(store, path, "noop"), filter), OutputFormat::json));

  CHECK(out["method"]["min_segment"] == 3);
  REQUIRE(out["series"].size() == 2);
  for (const auto& s : out["series"]) {
    INFO(s["config_label"]);
    CHECK(s["workload"] == "noop");
    CHECK(s["machine"] == "box|cpu|[]");
    const Json& points = s["points"];
    REQUIRE(points.size() == 10);  // not the interrupted run, not marl's
    CHECK(points[0]["run"] == 1);
    CHECK(points[0]["build"] == "1.1.0 a411f1e6");
    CHECK(points[0]["repeats"] == 3);
    CHECK(points[0]["low"].get<double>() < points[0]["throughput"].get<double>());
    CHECK(points[0]["high"].get<double>() > points[0]["throughput"].get<double>());
    CHECK(points[0]["cuda"] == "13.2");
    REQUIRE(s["change_points"].size() == 1);
    CHECK(s["change_points"][0]["run"] == 6);
    CHECK(s["change_points"][0]["ratio"].get<double>() == Approx(0.9).epsilon(0.01));
    CHECK(points[5]["change_point"]["ratio"].get<double>() == Approx(0.9).epsilon(0.01));
    CHECK(points[4]["change_point"].is_null());
    CHECK(points[5]["changes"] == Json::array({"build 1.1.0 a411f1e6 -> 1.1.0 0badc0de"}));
    CHECK(points[7]["changes"] == Json::array({"torch 2.15.0 -> 2.16.0"}));
    CHECK(points[6]["changes"].empty());
  }
  CHECK(out["series"][0]["config"]["batch_size"] == 16);
  CHECK(out["series"][0]["config_label"] == "batch_size=16");
  CHECK(out["series"][1]["points"][0]["throughput"].get<double>() == Approx(2000).epsilon(0.01));

  const std::string table = history_listing(
      history_series(read_history(store, path, "noop"), filter), OutputFormat::table);
  CHECK(table.find("change point at run 6") != std::string::npos);
  CHECK(table.find("torch 2.15.0 -> 2.16.0") != std::string::npos);
}
