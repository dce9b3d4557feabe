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

TEST_CASE("a failed verification backs off by the margin, at least 5%, never below min",
          "[analysis]") {
  SearchOptions o;
  o.min = 4;
  o.margin = 0.25;
  CHECK(back_off(100, o) == 75);
  o.margin = 0;
  CHECK(back_off(100, o) == 95);
  CHECK_FALSE(back_off(4, o));  // 3 is below min
  o.min = 1;
  CHECK_FALSE(back_off(1, o));  // nothing smaller
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
