// One number per fact: every view of a run gives a config the same
// throughput, ratio and interval, and a failed run says so. The fixture is
// a database written here with known blocks, so that the figures are fixed
// and two of its configs are tied by construction.
#include "harness.hpp"

#include "serve/api.hpp"
#include "support/format.hpp"

#include <gpusweep/db/store.hpp>

#include <cmath>
#include <map>

using namespace gpusweep;
using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;
using Json = nlohmann::json;

namespace {

// A 2 x 2 grid of channels_last x zero_grad_to_none, 3 repeats of 8 blocks
// each, every repeat's four trials taking turns (one interleave group, the
// cycle the block's index). Config 3 (channels_last) is 1.5x the baseline;
// config 4 differs from it only in zero_grad_to_none and is 0.5% faster:
// within compare's 1% minimum effect, a tie. Each trial has its own small
// process effect, so that the intervals have width.
int64_t write_fixture(const std::string& path) {
  db::Store store(path, db::Connection::Mode::read_write);
  db::SweepRecord s;
  s.name = "agree";
  s.workload = "noop";
  s.spec_json = R"({"name": "agree", "workload": "noop",
    "grid": {"channels_last": [false, true], "zero_grad_to_none": [true, false]},
    "measure": {"repeats": 3, "blocks": 8}})";
  s.spec_hash = "h";
  const double factor[] = {1.0, 1.02, 1.5, 1.5075};
  std::vector<db::TrialPlan> plans;
  for (int64_t repeat = 0; repeat < 3; ++repeat) {
    for (int64_t config = 0; config < 4; ++config) {
      db::TrialPlan p;
      p.ordinal = static_cast<int64_t>(plans.size());
      p.config_index = config;
      p.repeat = repeat;
      p.workload = "noop";
      p.plugin_version = "1";
      p.config_json =
          Json{{"channels_last", config >= 2}, {"zero_grad_to_none", config % 2 == 0}}.dump();
      p.config_hash = std::to_string(config);
      plans.push_back(p);
    }
  }
  const int64_t id = store.create_sweep(s, plans);
  for (const auto& t : store.trials(id)) {
    const auto c = static_cast<double>(t.plan.config_index);
    const auto r = static_cast<double>(t.plan.repeat);
    const double process = 1 + 0.001 * std::sin(7 * c + 3 * r + 1);
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    o.interleave_group = "round" + std::to_string(t.plan.repeat);
    std::vector<double> rates;
    for (int64_t k = 0; k < 8; ++k) {
      const double wiggle = 1 + 0.03 * std::sin(static_cast<double>(k) + r);
      const double rate = 1000 * factor[t.plan.config_index] * process * wiggle;
      db::BlockSample b;
      b.idx = k;
      b.steps = 10;
      b.samples = 1000;
      b.seconds = 1000 / rate;
      b.cycle = k;
      o.blocks.push_back(b);
      rates.push_back(rate);
    }
    std::sort(rates.begin(), rates.end());
    db::Summary m;
    m.unit = "images";
    m.blocks = 8;
    m.throughput_median = (rates[3] + rates[4]) / 2;
    m.step_time_median_s = 10 / m.throughput_median;
    m.peak_memory_bytes = 1e8;
    o.summary = m;
    store.commit_trial(t.id, o);
  }
  store.set_sweep_status(id, db::SweepStatus::finished);
  return id;
}

struct Figures {
  double throughput = NAN;
  double ratio = NAN;
  double low = NAN;
  double high = NAN;
};

double number(const Json& v) { return v.is_null() ? NAN : v.get<double>(); }

void check_same(const std::string& view, const Figures& a, const Figures& b) {
  INFO(view);
  CHECK(a.throughput == Approx(b.throughput).epsilon(1e-12));
  if (std::isnan(b.ratio)) {
    CHECK(std::isnan(a.ratio));
  } else {
    CHECK(a.ratio == Approx(b.ratio).epsilon(1e-12));
    CHECK(a.low == Approx(b.low).epsilon(1e-12));
    CHECK(a.high == Approx(b.high).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE(
    "compare, best, results, the report and serve give a config one throughput, ratio "
    "and interval",
    "[integration][agreement]") {
  Sandbox box;
  const int64_t id = write_fixture(box.db());

  // compare's figures are the reference.
  auto r = box.gpusweep("compare --format json --db results.db");
  INFO(r.output);
  REQUIRE(r.code == 0);
  std::map<int64_t, Figures> compare;
  for (const auto& row : Json::parse(r.output)) {
    compare[row.at("config").get<int64_t>()] = {number(row.at("throughput_median")),
                                                number(row.at("ratio")), number(row.at("ci_low")),
                                                number(row.at("ci_high"))};
  }
  REQUIRE(compare.size() == 4);
  CHECK(compare.at(3).low > 1.4);

  r = box.gpusweep("results --format json --db results.db");
  REQUIRE(r.code == 0);
  for (const auto& row : Json::parse(r.output)) {
    const int64_t config = row.at("config").get<int64_t>();
    Figures f{number(row.at("config_throughput")), number(row.at("config_ratio")),
              number(row.at("config_ci_low")), number(row.at("config_ci_high"))};
    if (config == 1) {
      CHECK(f.ratio == 1.0);
      f.ratio = NAN;  // the baseline: compare gives it no ratio of its own
    }
    check_same("results, config " + std::to_string(config), f, compare.at(config));
  }

  // best: the fastest is config 4, tied with config 3, which changes one
  // setting fewer from the baseline and is the pick.
  r = box.gpusweep("best --format json --db results.db");
  REQUIRE(r.code == 0);
  const Json best = Json::parse(r.output).at("best");
  CHECK(best.at("fastest") == 4);
  CHECK(best.at("tied") == Json{3, 4});
  REQUIRE(best.at("config") == 3);
  check_same("best",
             {number(best.at("metrics").at("throughput")), number(best.at("throughput_ratio")),
              number(best.at("ci_low")), number(best.at("ci_high"))},
             compare.at(3));
  CHECK_THAT(box.gpusweep("best --db results.db").output, Contains("tie: configs 3 and 4"));

  // serve's JSON for the run.
  const host::ServeApi api({box.db()});
  const Json run = api.run(0, id);
  for (const auto& row : run.at("compare")) {
    const int64_t config = row.at("config").get<int64_t>();
    check_same("serve, config " + std::to_string(config),
               {number(row.at("throughput_median")), number(row.at("ratio")),
                number(row.at("ci_low")), number(row.at("ci_high"))},
               compare.at(config));
  }

  // The report prints them as compare's table does.
  r = box.gpusweep("report --db results.db --html report.html");
  REQUIRE(r.code == 0);
  const std::string html = box.read("report.html");
  for (const auto& [config, f] : compare) {
    INFO("report, config " << config);
    CHECK_THAT(html, Contains(host::human_rate(f.throughput, "images")));
    if (std::isnan(f.ratio)) continue;
    CHECK_THAT(html, Contains(host::fixed(f.ratio, 3) + "x"));
    CHECK_THAT(html, Contains("[" + host::fixed(f.low, 3) + ", " + host::fixed(f.high, 3) + "]"));
  }
}

TEST_CASE("a run whose every trial raises exits 3, and compare and best say why",
          "[integration][agreement]") {
  Sandbox box;
  box.write("s.json", R"({"name": "broken", "workload": "faults",
    "grid": {"mode": ["throw_step"], "seed": [0, 1]},
    "measure": {"min_block_s": 0, "warmup_steps": 1, "steps_per_block": 2, "blocks": 5,
                "repeats": 1}})");
  auto r = box.gpusweep("run s.json --db results.db");
  INFO(r.output);
  CHECK(r.code == 3);
  CHECK_THAT(r.output, Contains("failed: no trial ended ok") && Contains("results --trial"));

  r = box.gpusweep("compare --db results.db");
  INFO(r.output);
  CHECK_THAT(r.output, Contains("the baseline, config 1, has no ok trial") &&
                           Contains("baseline failed: failed"));
  CHECK(r.output.find("1.00x") == std::string::npos);

  r = box.gpusweep("best --db results.db");
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("nothing of sweep 'broken' ran ok"));

  // A trial's error and log, whole.
  const std::string trial = box.text("SELECT min(id) FROM trials");
  r = box.gpusweep("results --db results.db --trial " + trial);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Contains("status:   failed") && Contains("error:"));
}
