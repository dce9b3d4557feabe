// `gpusweep history` on a database of several runs written through the
// store: what the command reads, analyses and prints as JSON
// (analysis/history.hpp, report/history_view.hpp).
#include "report/history_view.hpp"
#include "analysis/history.hpp"

#include "history_runs.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>

using namespace gpusweep;
using namespace gpusweep::host;
using test::RunSpec;
using test::write_run;

TEST_CASE("history leaves out the runs of tune-batch and diagnose, by their stored kind",
          "[history]") {
  test::TempDir dir("history_kinds");
  const std::string path = dir.file("h.db");
  {
    db::Store store(path, db::Connection::Mode::read_write);
    for (int i = 0; i < 8; ++i) {
      write_run(store, i, RunSpec{});
      // Between the sweeps, a tune-batch's and a diagnose's short probes of
      // the same configs at a tenth of the level (a few instrumented steps).
      RunSpec probe;
      probe.level = 100;
      probe.kind = i % 2 == 0 ? db::RunKind::tune_batch : db::RunKind::diagnose;
      write_run(store, 100 + i, probe);
    }
  }
  db::Store store(path, db::Connection::Mode::read_only);
  std::set<db::RunKind> kinds;
  std::set<int64_t> sweeps;  // the runs of kind sweep, which alone are points
  for (const auto& s : store.sweeps()) {
    kinds.insert(s.kind);
    if (s.kind == db::RunKind::sweep) sweeps.insert(s.id);
  }
  CHECK(kinds.size() == 3);  // the kind each was written with
  REQUIRE(sweeps.size() == 8);
  HistoryFilter filter;
  filter.workload = "noop";
  const HistoryResult result = history_series(read_history(store, path, "noop"), filter);
  REQUIRE(result.series.size() == 2);
  for (const auto& series : result.series) {
    CHECK(series.points.size() == 8);
    CHECK(series.change_points.empty());
    for (const auto& p : series.points) CHECK(sweeps.count(p.run_id) == 1);
  }
}

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
    interrupted.status = db::SweepStatus::interrupted;
    write_run(store, 10, interrupted);
    RunSpec other;
    other.workload = "marl";
    write_run(store, 11, other);
  }
  db::Store store(path, db::Connection::Mode::read_only);
  HistoryFilter filter;
  filter.workload = "noop";
  const HistoryResult result = history_series(read_history(store, path, "noop"), filter);
  const Json out = Json::parse(history_listing(result, OutputFormat::json));

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
    // The listing carries the analysis's interval as computed (the fixture's
    // blocks are fixed figures, not timings).
    const HistoryPoint& first = result.series[s["config"]["batch_size"] == 16 ? 0 : 1].points[0];
    CHECK(points[0]["low"].get<double>() == first.low);
    CHECK(points[0]["high"].get<double>() == first.high);
    // The throughput shown is the stored blocks' level: the fixture writes
    // fixed figures, 1000 samples/s for batch 16 and 2000 for batch 32, a
    // repeat off by at most 0.4% and a block by 0.2%.
    const double level = s["config"]["batch_size"] == 16 ? 1000 : 2000;
    CHECK(points[0]["throughput"].get<double>() == Approx(level).epsilon(0.006));
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

  const std::string table = history_listing(
      history_series(read_history(store, path, "noop"), filter), OutputFormat::table);
  CHECK(table.find("change point at run 6") != std::string::npos);
  CHECK(table.find("torch 2.15.0 -> 2.16.0") != std::string::npos);

  // history --max-p and --min-segment: the same step is no change point at
  // a p it cannot reach, and a series too short for segments of 6.
  ChangePointOptions strict;
  strict.max_p = 1e-30;
  const std::string none = history_listing(
      history_series(read_history(store, path, "noop"), filter, strict), OutputFormat::table);
  CHECK(none.find("change point at run") == std::string::npos);
  CHECK(none.find("no change point (p < 1e-30)") != std::string::npos);
  ChangePointOptions long_segments;
  long_segments.min_segment = 6;
  const std::string short_series =
      history_listing(history_series(read_history(store, path, "noop"), filter, long_segments),
                      OutputFormat::table);
  CHECK(short_series.find("a change point needs at least 12") != std::string::npos);
}
