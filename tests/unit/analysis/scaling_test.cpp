// Data-parallel scaling against the same settings at world_size 1.
#include "analysis/scaling.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace gpusweep;
using namespace gpusweep::host;

namespace {

// Three repeats of 8 blocks around `typical` samples/s, a repeat's level
// moved by a few per cent (the process effects the interval must carry).
ConfigSamples config(int64_t index, Json settings, double typical,
                     std::vector<double> comm_share = {}) {
  ConfigSamples c;
  c.config_index = index;
  c.config = std::move(settings);
  c.ok = 3;
  for (int r = 0; r < 3; ++r) {
    RunSamples run;
    run.repeat = r;
    const double level = 1 + 0.02 * ((r + index) % 3 - 1);  // this process's
    for (int b = 0; b < 8; ++b) {
      run.values.push_back(typical * level * (1 + 0.004 * ((b * 7 + index) % 5)));
    }
    c.throughput.insert(c.throughput.end(), run.values.begin(), run.values.end());
    c.runs.push_back(run);
  }
  c.comm_share = std::move(comm_share);
  return c;
}

}  // namespace

TEST_CASE("scaling pairs each multi-rank config with its settings at world_size 1",
          "[host][scaling]") {
  const std::vector<ConfigSamples> configs = {
      config(0, {{"world_size", 1}, {"batch_size", 8}, {"dp_bucket_mb", 25}}, 100),
      // dp_ settings do nothing at world_size 1: this pairs with config 0.
      config(1, {{"world_size", 2}, {"batch_size", 8}, {"dp_bucket_mb", 1}}, 170, {0.1, 0.3, 0.2}),
      config(2, {{"world_size", 2}, {"batch_size", 16}, {"dp_bucket_mb", 25}}, 300),
  };
  const auto rows = scaling(configs);
  REQUIRE(rows.size() == 2);  // the single-process config is not a row

  const ScalingRow& paired = rows[0];
  REQUIRE(paired.single == &configs[0]);
  REQUIRE(paired.speedup);
  CHECK(paired.speedup->ratio == Approx(1.7).epsilon(0.01));
  // Efficiency is the speed-up per rank, its interval the speed-up's
  // halved: it carries the processes' spread (2% a repeat), so it is not
  // the blocks' narrow one.
  CHECK(paired.efficiency == Approx(paired.speedup->ratio / 2));
  CHECK(paired.efficiency == Approx(0.85).epsilon(0.02));
  CHECK(paired.low == Approx(paired.speedup->low / 2));
  CHECK(paired.high == Approx(paired.speedup->high / 2));
  CHECK(paired.low < paired.efficiency);
  CHECK(paired.high > paired.efficiency);
  CHECK(paired.high - paired.low > 0.02);
  CHECK(paired.high - paired.low < 0.3);
  CHECK(*paired.comm_share == Approx(0.2));  // the median over the repeats

  // No config with batch_size 16 ran at one rank: no efficiency, and why.
  const ScalingRow& alone = rows[1];
  CHECK(alone.single == nullptr);
  CHECK_FALSE(alone.speedup);
  CHECK(std::isnan(alone.efficiency));
  CHECK(alone.note.find("world_size 1") != std::string::npos);
  CHECK_FALSE(alone.comm_share);
}

TEST_CASE("a sweep without multi-rank configs has no scaling rows", "[host][scaling]") {
  CHECK(
      scaling({config(0, {{"batch_size", 8}}, 100), config(1, {{"batch_size", 16}}, 180)}).empty());
}

TEST_CASE("a config is paired for weak scaling by its batch a rank, for strong by the global one",
          "[host][scaling]") {
  const std::vector<ConfigSamples> configs = {
      config(0, {{"world_size", 1}, {"batch_size", 8}}, 100),
      config(1, {{"world_size", 1}, {"batch_size", 16}}, 180),
      config(2, {{"world_size", 2}, {"batch_size", 8}}, 170),
  };
  const auto rows = scaling(configs);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].kind == "weak");
  CHECK(rows[0].single == &configs[0]);
  CHECK(rows[0].efficiency == Approx(0.85).epsilon(0.02));
  // The same 16 samples a step in one process or two: 170 / 180 over 2.
  CHECK(rows[1].kind == "strong");
  CHECK(rows[1].single == &configs[1]);
  CHECK(rows[1].efficiency == Approx(170.0 / 180 / 2).epsilon(0.02));
}

TEST_CASE("ranks pair only with a single process that ran as many threads as each rank",
          "[host][scaling]") {
  std::vector<ConfigSamples> configs = {
      config(0, {{"world_size", 1}, {"batch_size", 8}, {"threads", 0}}, 100),
      config(1, {{"world_size", 2}, {"batch_size", 8}, {"threads", 0}}, 110),
  };
  // threads 0: the single process took both cores, each rank one thread.
  configs[0].threads = 2;
  configs[1].threads = 1;
  auto rows = scaling(configs);
  REQUIRE(rows.size() == 1);
  CHECK(std::isnan(rows[0].efficiency));
  CHECK_THAT(rows[0].note, Catch::Matchers::Contains("the single process ran 2 threads and each "
                                                     "rank 1"));
  // As wide as a rank: compared.
  configs[0].threads = 1;
  rows = scaling(configs);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].efficiency == Approx(0.55).epsilon(0.03));
  // Older trials that did not say: compared, as before.
  configs[0].threads.reset();
  CHECK_FALSE(std::isnan(scaling(configs)[0].efficiency));
}
