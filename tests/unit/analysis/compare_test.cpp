// Comparing configs against a baseline, on synthetic samples.
#include "analysis/compare.hpp"

#include "analysis/pareto.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace gpusweep;
using namespace gpusweep::host;

namespace {
ConfigSamples config(int64_t index, Json settings, std::vector<double> throughput,
                     std::vector<double> quality = {}) {
  ConfigSamples c;
  c.config_index = index;
  c.config = std::move(settings);
  c.throughput = throughput;
  c.runs.push_back(RunSamples{0, std::nullopt, "", std::move(throughput), {}});
  for (double q : quality) c.quality.push_back({q, 0.01});  // an evaluation's standard error
  c.ok = 1;
  c.higher_is_better = true;
  return c;
}
}  // namespace

TEST_CASE("compare finds faster, slower and equal configs against the baseline",
          "[host][compare]") {
  const std::vector<ConfigSamples> configs = {
      config(0, {{"spin", 100}}, {100, 101, 99, 100.5, 99.5, 100.2}, {10}),
      config(1, {{"spin", 50}}, {200, 198, 201, 199, 202, 200}, {10.5}),
      config(2, {{"spin", 130}}, {77, 76.5, 77.5, 76.8, 77.2, 77}, {8}),
      config(3, {{"spin", 101}}, {100.1, 99.2, 100.8, 100.4, 99.6, 100.3}, {10}),
  };
  CompareOptions opt;
  opt.baseline = {{"spin", 100}};
  const auto rows = compare_configs(configs, opt);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].baseline);
  CHECK_FALSE(rows[0].verdict);
  CHECK(*rows[1].verdict == Verdict::faster);
  CHECK(rows[1].ratio->ratio == Approx(2.0).epsilon(0.01));
  CHECK(rows[1].ratio->low > 1.9);
  CHECK(*rows[2].verdict == Verdict::slower);
  CHECK(*rows[3].verdict == Verdict::no_difference);
  CHECK(rows[1].quality->change == Approx(0.05));
  CHECK(rows[1].quality->verdict == QualityVerdict::non_inferior);
  CHECK(rows[2].quality->change == Approx(-0.2));
  CHECK(rows[2].quality->verdict == QualityVerdict::inferior);

  // A steady 0.5% difference is real (the interval excludes 1) but below
  // the smallest effect of interest: negligible, unless asked for any.
  const std::vector<ConfigSamples> close = {
      config(0, {{"spin", 100}}, {100, 100.01, 99.99, 100.02, 99.98, 100}),
      config(1, {{"spin", 99}}, {100.5, 100.51, 100.49, 100.52, 100.48, 100.5}),
  };
  CHECK(*compare_configs(close, opt)[1].verdict == Verdict::negligible);
  CompareOptions any = opt;
  any.min_effect = 0;
  CHECK(*compare_configs(close, any)[1].verdict == Verdict::faster);

  // Lower-is-better quality (a loss): a lower value is an improvement.
  auto loss_configs = configs;
  for (auto& c : loss_configs) c.higher_is_better = false;
  const auto loss_rows = compare_configs(loss_configs, opt);
  CHECK(loss_rows[2].quality->change == Approx(0.2));
  CHECK(loss_rows[2].quality->verdict == QualityVerdict::non_inferior);
}

TEST_CASE("a baseline must pick exactly one config", "[host][compare]") {
  const std::vector<ConfigSamples> configs = {config(0, {{"a", 1}, {"b", 1}}, {1, 2}),
                                              config(1, {{"a", 1}, {"b", 2}}, {1, 2})};
  CompareOptions opt;
  opt.baseline = {{"a", 1}};
  CHECK_THROWS_WITH(compare_configs(configs, opt), Catch::Matchers::Contains("matches 2 configs"));
  opt.baseline = {{"a", 3}};
  CHECK_THROWS_WITH(compare_configs(configs, opt), Catch::Matchers::Contains("matches none"));
  opt.baseline = Json::object();  // default: config #1
  CHECK(compare_configs(configs, opt)[0].baseline);
}

TEST_CASE("ablation recovers each knob's known multiplicative effect", "[host][compare]") {
  // throughput = 100 x f(a) x g(b), with a little noise: a=2 is 1.5x, b=y is 0.8x, b=z 1.0x.
  const std::map<int, double> fa = {{1, 1.0}, {2, 1.5}};
  const std::map<std::string, double> gb = {{"x", 1.0}, {"y", 0.8}, {"z", 1.0}};
  std::vector<ConfigSamples> configs;
  int64_t index = 0;
  const std::vector<double> noise = {0.99, 1.01, 1.0, 0.995, 1.005};
  for (const auto& [a, fav] : fa) {
    for (const auto& [b, gbv] : gb) {
      std::vector<double> samples;
      for (double e : noise) samples.push_back(100 * fav * gbv * e);
      configs.push_back(config(index++, {{"a", a}, {"b", b}}, samples));
    }
  }
  const Json grid = {{"a", {1, 2}}, {"b", {"x", "y", "z"}}};
  const auto rows = ablation(configs, grid);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].knob == "a");
  CHECK(rows[0].pairs == 3);
  CHECK(rows[0].ratio == Approx(1.5).epsilon(1e-6));
  CHECK(rows[0].low <= 1.5);
  CHECK(rows[0].high >= 1.5);
  CHECK(rows[1].knob == "b");
  CHECK(rows[1].to == "y");
  CHECK(rows[1].pairs == 2);
  CHECK(rows[1].ratio == Approx(0.8).epsilon(1e-6));
  CHECK(rows[2].to == "z");
  CHECK(rows[2].ratio == Approx(1.0).epsilon(1e-6));
  // A missing partner lowers the pair count rather than inventing a ratio.
  configs.erase(configs.begin() + 4);  // a=2, b=y
  CHECK(ablation(configs, grid)[1].pairs == 1);
}

TEST_CASE("the Pareto front of memory against throughput", "[report]") {
  const std::vector<std::pair<double, double>> pts = {{1, 10}, {2, 20}, {2, 15},  {3, 18},
                                                      {1, 10}, {4, 30}, {0.5, 5}, {4, 29}};
  const std::vector<bool> expected = {true, true, false, false, true, true, true, false};
  CHECK(host::pareto_front(pts) == expected);

  // Against the definition, on random points with many ties.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coord(0, 20);
  std::vector<std::pair<double, double>> many(500);
  for (auto& p : many) p = {coord(rng), coord(rng)};
  const auto front = host::pareto_front(many);
  for (size_t i = 0; i < many.size(); ++i) {
    const auto [x, y] = many[i];
    const bool dominated = std::any_of(many.begin(), many.end(), [&](const auto& o) {
      return (o.first <= x && o.second > y) || (o.first < x && o.second >= y);
    });
    INFO(i);
    CHECK(front[i] == !dominated);
  }
}

TEST_CASE(
    "configs whose trials ran on other machines than the baseline's get no verdict unless "
    "asked",
    "[host][compare]") {
  auto on = [](const std::string& machine, double typical) {
    ConfigSamples c;
    c.config_index = typical > 100 ? 1 : 0;
    c.config = {{"fast", typical > 100}};
    c.ok = 3;
    for (int r = 0; r < 3; ++r) {
      RunSamples run;
      run.repeat = r;
      run.machine = machine;
      for (int b = 0; b < 6; ++b) run.values.push_back(typical * (1 + 0.001 * ((b + r) % 3)));
      c.runs.push_back(run);
      c.throughput.insert(c.throughput.end(), run.values.begin(), run.values.end());
    }
    return c;
  };
  const std::vector<ConfigSamples> configs = {on("node1|cpu|[]", 100), on("node2|cpu|[]", 150)};
  CompareOptions opt;
  opt.baseline = {{"fast", false}};
  auto rows = compare_configs(configs, opt);
  REQUIRE(rows[1].ratio);
  CHECK(rows[1].ratio->across_machines);
  CHECK_FALSE(rows[1].verdict);
  CHECK_THAT(rows[1].withheld, Catch::Matchers::Contains("different machines"));
  opt.across_machines = true;
  rows = compare_configs(configs, opt);
  REQUIRE(rows[1].verdict);
  CHECK(*rows[1].verdict == Verdict::faster);
}
