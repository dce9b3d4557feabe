// tune-batch's search, driven by an oracle instead of trials: the exact
// sequence of probes and the answer in each mode.
#include "analysis/batch_search.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

#include <functional>
#include <vector>

using namespace gpusweep::host;
using gpusweep::db::TrialStatus;

namespace {

struct Run {
  std::vector<int64_t> probes;
  std::optional<int64_t> largest;
  std::optional<int64_t> with_margin;
};

Run search(SearchOptions o, const std::function<bool(int64_t)>& fits) {
  BatchSearch s(o);
  Run r;
  while (auto n = s.next()) {
    REQUIRE(r.probes.size() < 64);
    r.probes.push_back(*n);
    s.record(*n, fits(*n));
  }
  r.largest = s.largest_fit();
  r.with_margin = s.with_margin();
  return r;
}

}  // namespace

TEST_CASE("power mode doubles until a size does not fit", "[host]") {
  SearchOptions o;
  o.mode = SearchMode::power;
  o.margin = 0;
  const Run r = search(o, [](int64_t n) { return n <= 100; });
  CHECK(r.probes == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128});
  CHECK(r.largest == 64);
  CHECK(r.with_margin == 64);
}

TEST_CASE("binsearch mode bisects between the last fit and the first failure", "[host]") {
  SearchOptions o;
  o.mode = SearchMode::binsearch;
  o.margin = 0;
  const Run r = search(o, [](int64_t n) { return n <= 100; });
  // Lightning: then bisect until the bracket is one wide.
  CHECK(r.probes == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 96, 112, 104, 100, 102, 101});
  CHECK(r.largest == 100);
}

TEST_CASE("the margin stops bisection early and is taken off the answer", "[host]") {
  SearchOptions o;
  o.mode = SearchMode::binsearch;
  o.margin = 0.05;
  const Run r = search(o, [](int64_t n) { return n <= 100; });
  // Bracket [96, 104] is 8 wide, more than 5% of 96 (floor(4.8) = 4): one
  // more probe; [100, 104] is within 5% of 100 (4 <= 5): stop, where margin 0
  // goes on to 102 and 101.
  CHECK(r.probes == std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 96, 112, 104, 100});
  CHECK(r.largest == 100);
  CHECK(r.with_margin == 95);  // floor(100 x 0.95)
}

TEST_CASE("max caps the growth and ends the search when it fits", "[host]") {
  SearchOptions o;
  o.mode = SearchMode::binsearch;
  o.min = 3;
  o.max = 20;
  o.margin = 0;
  BatchSearch s(o);
  std::vector<int64_t> probes;
  while (auto n = s.next()) {
    probes.push_back(*n);
    s.record(*n, true);
  }
  CHECK(probes == std::vector<int64_t>{3, 6, 12, 20});
  CHECK(s.largest_fit() == 20);
  CHECK(s.reached_max());
  CHECK_FALSE(s.first_failure());
}

TEST_CASE("nothing fits when the minimum fails", "[host]") {
  SearchOptions o;
  o.mode = SearchMode::binsearch;
  o.min = 8;
  const Run r = search(o, [](int64_t) { return false; });
  CHECK(r.probes == std::vector<int64_t>{8});
  CHECK_FALSE(r.largest);
  CHECK_FALSE(r.with_margin);
}

TEST_CASE("an unknown search mode is refused", "[host]") {
  CHECK_THROWS_AS(parse_search_mode("linear"), gpusweep::UsageError);
}

TEST_CASE("the throughput curve shows each size once, its verification first, and saturation",
          "[analysis]") {
  auto probe = [](int64_t batch, double rate, bool verify, TrialStatus status = TrialStatus::ok) {
    BatchProbe p;
    p.batch = batch;
    p.status = status;
    p.verify = verify;
    if (p.status == TrialStatus::ok) {
      gpusweep::db::Summary s;
      s.unit = "samples";
      s.throughput_median = rate;
      p.summary = s;
    }
    return p;
  };
  const std::vector<BatchProbe> probes = {
      probe(8, 100, false), probe(16, 190, false), probe(32, 200, false),
      probe(64, 0, false, TrialStatus::oom), probe(32, 198, true)};
  const BatchCurve c = throughput_curve(probes);
  CHECK(c.points == std::vector<size_t>{0, 1, 4});  // 32 shown by its verification
  CHECK(c.best_batch == 32);
  CHECK(c.best_rate == 198);
  CHECK(c.saturation_batch == 16);  // 190 >= 0.95 x 198
  CHECK(throughput_curve({probe(8, 0, false, TrialStatus::oom)}).best_batch == 0);
}

namespace {

BatchProbe measured(int64_t batch, double rate, bool verify = false,
                    TrialStatus status = TrialStatus::ok) {
  BatchProbe p;
  p.batch = batch;
  p.status = status;
  p.verify = verify;
  p.trial_id = batch;
  if (status == TrialStatus::ok) {
    gpusweep::db::Summary s;
    s.unit = "images";
    s.throughput_median = rate;
    p.summary = s;
  }
  return p;
}

// The probes of tune-batch restoration on an H100 under a 4 GiB cap
// (2026-11-26): throughput peaks at 256, 512 fits, 1024 does not.
std::vector<BatchProbe> h100_restoration_probes() {
  const std::vector<std::pair<int64_t, double>> curve = {
      {1, 395},   {2, 701},   {4, 1291},   {8, 2170},   {16, 3394},
      {32, 4585}, {64, 4715}, {128, 5159}, {256, 6596}, {512, 5740}};
  std::vector<BatchProbe> probes;
  for (const auto& [batch, rate] : curve) probes.push_back(measured(batch, rate));
  probes.push_back(measured(1024, 0, false, TrialStatus::oom));
  return probes;
}

}  // namespace

TEST_CASE("tune-batch recommends the fastest size that fits with the margin (H100 curve)",
          "[analysis]") {
  std::vector<BatchProbe> probes = h100_restoration_probes();
  SearchOptions o;  // 5% margin
  const int64_t cap = size_with_margin(512, o);
  CHECK(cap == 486);
  std::vector<int64_t> verified;
  const auto rec = recommend_batch(probes, cap, [&](int64_t size) {
    verified.push_back(size);
    return measured(size, size == 256 ? 6550 : 5214, true);
  });
  // 256 is the fastest; 486 fits with the margin but is 21% slower, and is
  // never verified; 512 fits only without the margin.
  CHECK(rec == 256);
  CHECK(verified == std::vector<int64_t>{256});
  CHECK(probes.back().verify);
}

TEST_CASE(
    "a larger size within 5% of the fastest is preferred, and a rising curve verifies "
    "the cap",
    "[analysis]") {
  // 128 is fastest among probes, 256 within 5% of it: 256 leads.
  std::vector<BatchProbe> flat = {measured(64, 900), measured(128, 1000), measured(256, 960),
                                  measured(512, 700), measured(1024, 0, false, TrialStatus::oom)};
  CHECK(recommendation_order(flat, 486) == std::vector<int64_t>{256, 128, 64});
  // Throughput still rising at the largest fit (512): the cap (486) is
  // verified first and wins when its full measurement is fastest.
  std::vector<BatchProbe> rising = {measured(128, 500), measured(256, 800), measured(512, 1000),
                                    measured(1024, 0, false, TrialStatus::oom)};
  std::vector<int64_t> verified;
  const auto rec = recommend_batch(rising, 486, [&](int64_t size) {
    verified.push_back(size);
    return measured(size, 950, true);
  });
  CHECK(rec == 486);
  CHECK(verified == std::vector<int64_t>{486});
}

TEST_CASE("a failed verification rules out its size and larger ones", "[analysis]") {
  std::vector<BatchProbe> probes = {measured(64, 900), measured(128, 1000), measured(256, 1100),
                                    measured(512, 0, false, TrialStatus::oom)};
  std::vector<int64_t> verified;
  const auto rec = recommend_batch(probes, 243, [&](int64_t size) {
    verified.push_back(size);
    return size >= 128 ? measured(size, 0, true, TrialStatus::oom) : measured(size, 880, true);
  });
  // The fastest probe (256) is above the cap: the cap is verified first and
  // fails, then 128 fails; 64 is what fits.
  CHECK(rec == 64);
  CHECK(verified == std::vector<int64_t>{243, 128, 64});
  // Three failures in a row: nothing recommended, three verifications only.
  verified.clear();
  std::vector<BatchProbe> many = {measured(8, 1), measured(16, 2), measured(32, 3),
                                  measured(64, 4)};
  CHECK_FALSE(recommend_batch(many, 64, [&](int64_t size) {
    verified.push_back(size);
    return measured(size, 0, true, TrialStatus::oom);
  }));
  CHECK(verified == std::vector<int64_t>{64, 32, 16});
}
