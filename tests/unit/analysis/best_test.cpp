// `gpusweep best` chooses from the trials' medians, under constraints, with
// the baseline resolved like every other command's.
#include "analysis/best.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;
using gpusweep::db::TrialStatus;
namespace db = gpusweep::db;

namespace {

// One ok trial of config `index` with batch_size `batch`.
db::TrialRecord trial(int64_t index, int batch, double throughput, double memory,
                      std::optional<double> quality, TrialStatus status = TrialStatus::ok) {
  db::TrialRecord t;
  t.plan.config_index = index;
  t.plan.config_json = Json{{"batch_size", batch}, {"lr", 0.1}}.dump();
  t.status = status;
  db::Summary s;
  s.unit = "samples";
  s.throughput_median = throughput;
  s.step_time_median_s = batch / throughput;
  s.peak_memory_bytes = memory;
  s.quality = quality;
  if (t.status == TrialStatus::ok) t.summary = s;
  return t;
}

SweepSpec grid_spec() {
  SweepSpec spec;
  spec.base = {{"lr", 0.1}};
  spec.grid = {{"batch_size", {32, 64, 128}}};
  return spec;
}

}  // namespace

TEST_CASE("best picks the fastest config that meets every constraint", "[analysis]") {
  const double GiB = 1024.0 * 1024 * 1024;
  const std::vector<db::TrialRecord> trials = {
      trial(0, 32, 100, 1 * GiB, 0.90),  trial(0, 32, 110, 1 * GiB, 0.90),
      trial(1, 64, 180, 3 * GiB, 0.89),  trial(1, 64, 200, 3 * GiB, 0.89),
      trial(2, 128, 300, 9 * GiB, 0.80), trial(2, 128, 0, 0, std::nullopt, TrialStatus::oom)};
  const SweepSpec spec = grid_spec();

  const BestChoice fastest = choose_best(spec, trials, Objective::throughput, {});
  REQUIRE(fastest.config_index == 2);
  CHECK(fastest.eligible == 3);

  const BestChoice capped = choose_best(
      spec, trials, Objective::throughput,
      {parse_constraint("peak_memory<8GiB"), parse_constraint("quality>=0.98*baseline")});
  REQUIRE(capped.config_index == 1);
  CHECK(capped.eligible == 2);
  CHECK(capped.metrics.at("throughput") == Approx(190));  // the median of its two repeats
  CHECK(capped.baseline.at("throughput") == Approx(105));
  CHECK(capped.base == Json{{"lr", 0.1}, {"batch_size", 64}});

  const BestChoice smallest = choose_best(spec, trials, Objective::memory, {});
  CHECK(smallest.config_index == 0);
  CHECK(choose_best(spec, trials, Objective::throughput, {parse_constraint("peak_memory<1GB")})
            .eligible == 0);
}

TEST_CASE("best's baseline is the sweep's, not the first config, when the sweep names one",
          "[analysis]") {
  SweepSpec spec = grid_spec();
  spec.baseline = {{"batch_size", 64}};
  const std::vector<db::TrialRecord> trials = {trial(0, 32, 100, 1e9, 0.90),
                                               trial(1, 64, 200, 2e9, 0.95)};
  // Relative to config #2's quality (0.95), config #1's 0.90 is not within 1%.
  const BestChoice b =
      choose_best(spec, trials, Objective::memory, {parse_constraint("quality>=0.99*baseline")});
  CHECK(b.config_index == 1);
}
