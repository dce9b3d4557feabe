// A workload's runs as series with change points and environment marks
// (analysis/history.hpp), from points made by hand: no database.
#include "analysis/history.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace gpusweep::host;

namespace {

// Run `run` of a series: its repeats spread by about +-1% around throughput
// (a fixed pattern, so that every test sees the same figures), on machine
// "box" with one software stack unless the test changes it.
HistoryPoint point(int64_t run, double throughput, const Json& config = {{"batch_size", 64}},
                   const std::string& machine = "box") {
  HistoryPoint p;
  p.source = "h.db";
  p.run_id = run;
  p.run_name = "nightly";
  char when[32];
  std::snprintf(when, sizeof when, "2026-12-%02lldT03:00:00.000Z", static_cast<long long>(run));
  p.created_at = when;
  p.workload = "dqn";
  p.machine = machine;
  p.config = config;
  p.unit = "updates";
  // A run-to-run wobble of +-0.5% on top, so that a level is not flat.
  const double wobble = 1 + 0.005 * std::sin(static_cast<double>(run) * 2.1);
  p.throughput = throughput * wobble;
  for (const double f : {0.99, 1.0, 1.01}) p.repeat_medians.push_back(p.throughput * f);
  p.versions.torch = "2.15.0";
  p.versions.cuda = "13.2";
  p.versions.driver = "13.4";
  p.versions.gpusweep = "0.1.0";
  p.versions.build = "1.1.0 a411f1e6";
  return p;
}

std::vector<HistoryPoint> step_series(size_t before, size_t after, double ratio) {
  std::vector<HistoryPoint> points;
  for (size_t i = 0; i < before + after; ++i) {
    points.push_back(point(static_cast<int64_t>(i + 1), i < before ? 3000 : 3000 * ratio));
  }
  return points;
}

}  // namespace

TEST_CASE("a 5% step is found and marked on the first run of the new level", "[history]") {
  const HistoryResult r = history_series(step_series(8, 8, 0.95), {});
  REQUIRE(r.series.size() == 1);
  const HistorySeries& s = r.series[0];
  REQUIRE(s.points.size() == 16);
  CHECK_FALSE(s.too_short);
  REQUIRE(s.change_points.size() == 1);
  CHECK(s.change_points[0].index == 8);
  CHECK(s.change_points[0].ratio == Approx(0.95).margin(0.005));
  CHECK(s.change_points[0].p_value < 0.001);
  for (size_t i = 0; i < s.points.size(); ++i) {
    INFO("point " << i);
    CHECK(s.points[i].change_point.has_value() == (i == 8));
  }
  CHECK(s.points[8].run_id == 9);
}

TEST_CASE("a flat series has no change point and a short one says none can be found yet",
          "[history]") {
  const HistoryResult flat = history_series(step_series(16, 0, 1.0), {});
  REQUIRE(flat.series.size() == 1);
  CHECK(flat.series[0].change_points.empty());
  CHECK_FALSE(flat.series[0].too_short);

  // Five runs and a 20% step: fewer than two segments of 3, so nothing.
  const HistoryResult short_one = history_series(step_series(3, 2, 0.8), {});
  CHECK(short_one.series[0].too_short);
  CHECK(short_one.series[0].change_points.empty());
  CHECK_FALSE(history_series(step_series(3, 3, 0.8), {}).series[0].too_short);
}

TEST_CASE("points are ordered by when their run was created whatever the input order",
          "[history]") {
  std::vector<HistoryPoint> points = step_series(8, 8, 0.95);
  std::reverse(points.begin(), points.end());
  const HistoryResult r = history_series(points, {});
  for (size_t i = 0; i < r.series[0].points.size(); ++i) {
    CHECK(r.series[0].points[i].run_id == static_cast<int64_t>(i + 1));
  }
  CHECK(r.series[0].change_points.at(0).index == 8);
}

TEST_CASE("environment and build changes are marked on the run where they happen", "[history]") {
  std::vector<HistoryPoint> points = step_series(8, 0, 1.0);
  for (size_t i = 3; i < points.size(); ++i) points[i].versions.torch = "2.16.0";
  for (size_t i = 5; i < points.size(); ++i) points[i].versions.build = "1.2.0 0badc0de";
  points[6].versions.driver = "";  // one run on a machine whose driver was gone
  const HistoryResult r = history_series(points, {});
  const auto& s = r.series.at(0);
  for (const size_t i : {0, 1, 2, 4}) CHECK(s.points[i].changes.empty());
  CHECK(s.points[3].changes == std::vector<std::string>{"torch 2.15.0 -> 2.16.0"});
  CHECK(s.points[5].changes == std::vector<std::string>{"build 1.1.0 a411f1e6 -> 1.2.0 0badc0de"});
  CHECK(s.points[6].changes == std::vector<std::string>{"driver CUDA 13.4 -> none"});
  CHECK(s.points[7].changes == std::vector<std::string>{"driver CUDA none -> 13.4"});
}

TEST_CASE("a script's Python packages are marked where one changes, not where none were recorded",
          "[history]") {
  std::vector<HistoryPoint> points = step_series(6, 0, 1.0);
  // Run 1 was recorded before packages were; then transformers moves on at
  // run 4 and accelerate comes in at run 6.
  for (size_t i = 1; i < points.size(); ++i) {
    points[i].versions.python = "3.11.2";
    points[i].versions.packages = {{"transformers", i < 3 ? "5.24.0" : "5.25.0"},
                                   {"numpy", "2.4.6"}};
  }
  points[5].versions.packages["accelerate"] = "1.15.0";
  const HistoryResult r = history_series(points, {});
  const auto& s = r.series.at(0);
  CHECK(s.points[1].changes == std::vector<std::string>{"python none -> 3.11.2"});
  CHECK(s.points[2].changes.empty());
  CHECK(s.points[3].changes == std::vector<std::string>{"transformers 5.24.0 -> 5.25.0"});
  CHECK(s.points[5].changes == std::vector<std::string>{"accelerate none -> 1.15.0"});
  CHECK(packages_text(s.points[5].versions.packages, true) ==
        "transformers 5.25.0, accelerate 1.15.0, +1 more");
  CHECK(packages_text(s.points[5].versions.packages, false) ==
        "transformers 5.25.0, accelerate 1.15.0, numpy 2.4.6");
}

TEST_CASE("series are split by machine and by config and keep their runs apart", "[history]") {
  const Json small = {{"batch_size", 64}};
  const Json large = {{"batch_size", 256}};
  std::vector<HistoryPoint> points;
  for (int64_t run = 1; run <= 4; ++run) {
    points.push_back(point(run, 1000, small, "box"));
    points.push_back(point(run, 2000, large, "box"));
    points.push_back(point(run, 1500, small, "other"));
  }
  const HistoryResult r = history_series(points, {});
  REQUIRE(r.series.size() == 3);
  for (const auto& s : r.series) {
    CHECK(s.points.size() == 4);
    for (const auto& p : s.points) {
      CHECK(p.machine == s.machine);
      CHECK(p.config == s.config);
    }
  }
  CHECK(r.series[0].machine == "box");
  CHECK(r.series[2].machine == "other");
  CHECK(r.series[2].points[0].throughput == Approx(1500).epsilon(0.01));
}

TEST_CASE("the filter keeps the series of a setting a machine and a workload", "[history]") {
  const Json small = {{"batch_size", 64}, {"precision", "fp32"}};
  const Json large = {{"batch_size", 256}, {"precision", "fp32"}};
  std::vector<HistoryPoint> points = {point(1, 1000, small, "box|cpu"),
                                      point(1, 2000, large, "box|cpu"),
                                      point(1, 1500, small, "other|cpu")};
  points.push_back(point(2, 10, small, "box|cpu"));
  points.back().workload = "marl";

  HistoryFilter by_setting;
  by_setting.config = {{"batch_size", 256}};
  const HistoryResult large_only = history_series(points, by_setting);
  REQUIRE(large_only.series.size() == 1);
  CHECK(large_only.series[0].config == large);

  HistoryFilter by_machine;
  by_machine.machine = "other";
  const HistoryResult other = history_series(points, by_machine);
  REQUIRE(other.series.size() == 1);
  CHECK(other.series[0].machine == "other|cpu");

  HistoryFilter by_workload;
  by_workload.workload = "marl";
  CHECK(history_series(points, by_workload).series.size() == 1);
  HistoryFilter unknown;
  unknown.config = {{"hidden", 128}};
  CHECK(history_series(points, unknown).series.empty());
  CHECK(history_series(points, {}).series.size() == 4);
}

TEST_CASE("a point's interval is the t interval of its repeats' geometric mean", "[history]") {
  HistoryPoint p = point(1, 1000);
  p.repeat_medians = {900, 1000, 1100};
  HistoryPoint single = point(2, 1000);
  single.repeat_medians = {1000};
  const HistoryResult r = history_series({p, single}, {});
  const HistoryPoint& three = r.series[0].points[0];
  double mean = 0;
  for (const double v : p.repeat_medians) mean += std::log(v) / 3;
  double ss = 0;
  for (const double v : p.repeat_medians) ss += std::pow(std::log(v) - mean, 2);
  const double se = std::sqrt(ss / 2 / 3);
  CHECK(three.log_se == Approx(se));
  // t(0.975, 2) = 4.303
  CHECK(three.low == Approx(std::exp(mean - 4.303 * se)).epsilon(1e-3));
  CHECK(three.high == Approx(std::exp(mean + 4.303 * se)).epsilon(1e-3));
  CHECK(std::isnan(r.series[0].points[1].low));
  CHECK(r.series[0].points[1].log_se == 0);
}

TEST_CASE(
    "a series is named by the settings that vary among its workload's configs even when "
    "the filter keeps one",
    "[history]") {
  const Json small = {{"batch_size", 64}, {"precision", "fp32"}};
  const Json large = {{"batch_size", 256}, {"precision", "fp32"}};
  HistoryFilter filter;
  filter.config = {{"batch_size", 256}};
  const HistoryResult r = history_series({point(1, 1000, small), point(1, 2000, large)}, filter);
  REQUIRE(r.series.size() == 1);
  CHECK(r.varying.at("dqn") == std::vector<std::string>{"batch_size"});
}

TEST_CASE("since leaves out a busy stretch that hides a later step", "[history]") {
  // A real series (bench/results/2026-11-28-history-real-series.md, series 1):
  // runs 1 to 6 on a busy machine, then base at 500 steps/s and, from run 13,
  // a build 5% slower at 476. Each run's throughput and log standard error
  // as history read them.
  const std::vector<std::pair<double, double>> runs = {
      {444.4, 0.0087}, {397.8, 0.0513}, {414.0, 0.0546}, {471.8, 0.0236}, {473.4, 0.0050},
      {394.2, 0.0373}, {500.0, 0.0000}, {500.0, 0.0000}, {500.0, 0.0000}, {500.0, 0.0000},
      {500.0, 0.0000}, {500.0, 0.0000}, {476.2, 0.0000}, {476.2, 0.0000}, {476.2, 0.0000},
      {476.2, 0.0000}, {476.2, 0.0000}, {476.2, 0.0000}, {476.2, 0.0000}, {459.9, 0.0029},
      {475.7, 0.0009}, {476.2, 0.0000}, {476.2, 0.0000}, {476.2, 0.0000}};
  std::vector<HistoryPoint> points;
  for (size_t i = 0; i < runs.size(); ++i) {
    HistoryPoint p = point(static_cast<int64_t>(i + 1), 1);
    p.throughput = runs[i].first;
    // Three repeats spread by a around the level have a log standard error
    // of a / sqrt(3).
    const double a = runs[i].second * std::sqrt(3.0);
    p.repeat_medians = {p.throughput * std::exp(-a), p.throughput, p.throughput * std::exp(a)};
    points.push_back(p);
  }
  HistoryFilter quiet;
  quiet.since = points[6].created_at.substr(0, 10);  // the day of run 7
  const HistoryResult r = history_series(points, quiet);
  REQUIRE(r.series.size() == 1);
  const HistorySeries& s = r.series[0];
  REQUIRE(s.points.size() == 18);
  CHECK(s.points.front().run_id == 7);
  REQUIRE(s.change_points.size() == 1);
  CHECK(s.points[s.change_points[0].index].run_id == 13);
  // The new level takes in run 20 (460), as history showed it: 0.950x.
  CHECK(s.change_points[0].ratio == Approx(0.950).margin(0.001));
  CHECK(r.since == quiet.since);
  // --since takes the listing's form of a time, and nothing else.
  CHECK(history_since("2026-11-28 20:10") == "2026-11-28T20:10");
  CHECK(history_since("2026-11-28T20:10:05") == "2026-11-28T20:10:05");
  CHECK_THROWS_WITH(history_since("28/11/2026"), Catch::Contains("give a UTC date or time"));
}
