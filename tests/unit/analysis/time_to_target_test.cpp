// Time to quality with censoring: order-statistic medians, their intervals and
// the paired ratio to the baseline, on hand-worked cases and on simulated
// sweeps whose times have a known lognormal distribution.
#include "analysis/time_to_target.hpp"
#include "analysis/race.hpp"

#include "wilson.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

using namespace gpusweep::host;
using gpusweep::test::rate;

namespace {

std::vector<TargetTime> times(std::initializer_list<std::pair<double, bool>> list) {
  std::vector<TargetTime> out;
  int64_t r = 0;
  for (const auto& [t, censored] : list) out.push_back({r++, t, censored});
  return out;
}

}  // namespace

TEST_CASE("medians by hand: the bracket of lower bounds and of censored as unbounded",
          "[host][target]") {
  CHECK(*summarise_times(times({{3, false}, {1, false}, {5, false}, {2, false}, {4, false}}))
             .median == 3);
  // Survival exactly one half after 2: halfway to the next reached time.
  CHECK(*summarise_times(times({{1, false}, {2, false}, {3, false}, {4, false}})).median == 2.5);
  // A trial censored at 2 (capped early) may have needed any time past 2:
  // the median lies between 3 (it at its bound) and 4 (it unbounded); the
  // upper end is the one ranked.
  const auto c =
      summarise_times(times({{1, false}, {2, true}, {3, false}, {4, false}, {5, false}}));
  CHECK(*c.median == 4);
  CHECK(c.median_low == 3);
  CHECK(c.reached == 4);
  CHECK(c.budget == 2);
  // Under a common budget the ends coincide.
  const auto common =
      summarise_times(times({{1, false}, {2, false}, {3, false}, {9, true}, {9, true}}));
  CHECK(*common.median == 3);
  CHECK(common.median_low == 3);
  // Over half censored: beyond the budget, and the interval unbounded above.
  const auto beyond = summarise_times(
      times({{1, false}, {5, true}, {5, true}, {5, true}, {2, false}, {5, true}, {5, true}}));
  CHECK_FALSE(beyond.median);
  CHECK(beyond.budget == 5);
  CHECK(beyond.median_low == 5);  // printed "> 5 s"
  REQUIRE(beyond.interval);
  CHECK(std::isinf(beyond.high));
}

TEST_CASE("MLPerf's olympic mean: fastest and slowest dropped, at most one never reaching",
          "[host][target]") {
  // 1..5 with the fastest (1) and slowest (5) dropped: 3.
  CHECK(*summarise_times(times({{5, false}, {1, false}, {3, false}, {2, false}, {4, false}}))
             .olympic_mean == 3);
  // One censored (it never reached the target): it is the slowest, dropped.
  CHECK(*summarise_times(times({{5, true}, {1, false}, {3, false}, {2, false}, {4, false}}))
             .olympic_mean == 3);
  // Two censored, or fewer than 5 trials: no valid score.
  CHECK_FALSE(summarise_times(times({{5, true}, {6, true}, {3, false}, {2, false}, {4, false}}))
                  .olympic_mean);
  CHECK_FALSE(
      summarise_times(times({{1, false}, {2, false}, {3, false}, {4, false}})).olympic_mean);
}

TEST_CASE("the sign test's ranks: the order statistics that give a median's interval",
          "[host][target]") {
  CHECK(sign_test_rank(5, 0.95) == 0);   // 2 / 32 > 5%: no interval from 5
  CHECK(sign_test_rank(6, 0.95) == 1);   // x_(1)..x_(6): 96.9%
  CHECK(sign_test_rank(10, 0.95) == 2);  // x_(2)..x_(9): 97.9%
  CHECK(sign_test_rank(20, 0.95) == 6);  // x_(6)..x_(15): 95.9%
}

TEST_CASE("paired ratios: exact where both reached, bounds where a side was censored",
          "[host][target]") {
  const auto base =
      times({{10, false}, {12, false}, {11, false}, {9, false}, {10, false}, {13, false}});
  auto slower = base;
  for (auto& t : slower) t.time_s *= 1.5;
  const auto r = paired_time_ratio(base, slower);
  REQUIRE(r);
  CHECK(r->pairs == 6);
  CHECK(r->known == 6);
  CHECK(r->ratio == Approx(1.5));
  REQUIRE(r->interval);
  CHECK(r->low == Approx(1.5));
  CHECK(r->high == Approx(1.5));
  // The config censored at 14 where the baseline took 12: its ratio is at
  // least 14/12, unbounded above, so the interval's top is infinite.
  slower[1] = {1, 14, true};
  const auto c = paired_time_ratio(base, slower);
  REQUIRE(c);
  CHECK(c->known == 5);
  CHECK(std::isinf(c->high));
  CHECK(c->low == Approx(14.0 / 12));  // with 6 pairs the interval is x_(1)..x_(6)
  CHECK_THAT(c->note, Catch::Matchers::Contains("1 of 6 seeds censored"));
  // Five seeds give no 95% interval, and say so.
  const auto five = paired_time_ratio(std::vector<TargetTime>(base.begin(), base.begin() + 5),
                                      std::vector<TargetTime>(slower.begin(), slower.begin() + 5));
  REQUIRE(five);
  CHECK_FALSE(five->interval);
  CHECK_THAT(five->note, Catch::Matchers::Contains("needs 6"));
}

TEST_CASE(
    "times to target from a known lognormal: the median's interval covers the truth and A/A "
    "pairs are rarely called different, censored up to 40%",
    "[host][target][sim]") {
  // 10 seeds a config (MLPerf's count). A seed's own pace (shared by the
  // baseline and the config trained from it) times each trial's noise, both
  // lognormal, the total of coefficient of variation cv; the budget censors
  // the slowest `censored` share of the distribution.
  std::mt19937 rng(29);
  std::normal_distribution<double> z(0, 1);
  const int sweeps = 200, seeds = 10;
  for (double cv : {0.05, 0.15, 0.30}) {
    for (double censored : {0.0, 0.2, 0.4}) {
      const double s = std::sqrt(std::log1p(cv * cv));  // log sd of a time
      const double seed_s = s * std::sqrt(0.5), own_s = s * std::sqrt(0.5);
      const double median = 100;
      // The budget: the (1 - censored) quantile of a time; none at 0.
      const double q =
          censored == 0 ? 1e9 : median * std::exp(s * (censored == 0.2 ? 0.8416 : 0.2533));
      int covered = 0, aa_different = 0, aa_interval = 0;
      for (int i = 0; i < sweeps; ++i) {
        std::vector<TargetTime> a, b;
        for (int r = 0; r < seeds; ++r) {
          const double pace = seed_s * z(rng);
          for (auto* side : {&a, &b}) {
            const double t = median * std::exp(pace + own_s * z(rng));
            side->push_back({r, std::min(t, q), t >= q});
          }
        }
        const auto sa = summarise_times(a);
        REQUIRE(sa.interval);
        covered += sa.low <= median && median <= sa.high;
        const auto ratio = paired_time_ratio(a, b);
        REQUIRE(ratio);
        aa_interval += ratio->interval;
        aa_different += ratio->interval && (ratio->low > 1 || ratio->high < 1);
      }
      INFO("cv " << cv << ", " << 100 * censored << "% censored: the median's interval covers "
                 << rate(covered, sweeps) << "; A/A called different "
                 << rate(aa_different, sweeps));
      CHECK(covered >= 0.93 * sweeps);
      CHECK(aa_interval == sweeps);
      CHECK(aa_different <= 0.05 * sweeps);
    }
  }
}

TEST_CASE("a config 30% slower to the target is called so from 10 seeds", "[host][target][sim]") {
  std::mt19937 rng(2929);
  std::normal_distribution<double> z(0, 1);
  int slower = 0;
  const int sweeps = 200;
  for (int i = 0; i < sweeps; ++i) {
    std::vector<TargetTime> a, b;
    for (int r = 0; r < 10; ++r) {
      const double pace = 0.1 * z(rng);  // seeds shared: the pairing's gain
      a.push_back({r, 100 * std::exp(pace + 0.05 * z(rng)), false});
      b.push_back({r, 130 * std::exp(pace + 0.05 * z(rng)), false});
    }
    const auto ratio = paired_time_ratio(a, b);
    slower += ratio && ratio->interval && ratio->low > 1;
  }
  INFO("called slower: " << rate(slower, sweeps));
  CHECK(slower >= 0.95 * sweeps);
}

TEST_CASE("the sign test's drop counts only seeds known to be slower", "[host][target]") {
  // Leader reached in 10; candidate reached in 12 (slower), censored at 15
  // (slower: past the leader's time), censored at 8 (unknown), and a seed
  // where the leader itself was censored (unknown, whatever the candidate).
  const std::vector<TargetTime> leader = {
      {0, 10, false}, {1, 10, false}, {2, 10, false}, {3, 10, true}, {4, 10, false}};
  const std::vector<TargetTime> candidate = {
      {0, 12, false}, {1, 15, true}, {2, 8, true}, {3, 30, false}, {5, 99, false}};
  const SignTest t = slower_by_sign(leader, candidate);
  CHECK(t.pairs == 4);  // seed 4 and 5 are each on one side only
  CHECK(t.slower == 2);
  CHECK(t.p == Approx(11.0 / 16));  // P(Bin(4, 1/2) >= 2)
  // Slower on all of 10 seeds: 2^-10.
  std::vector<TargetTime> l10, c10;
  for (int s = 0; s < 10; ++s) {
    l10.push_back({s, 1, false});
    c10.push_back({s, 2, s % 2 == 0});
  }
  CHECK(slower_by_sign(l10, c10).p == Approx(1.0 / 1024));
  CHECK(slower_by_sign(c10, l10).p == 1);
}

// A race's looks on time to target, simulated: the leader and a candidate
// as fast as each other (the candidate is not slower: a drop is false), in
// rounds with a third, slower config, every trial adaptively capped at 1.5x
// its round's best time (and a budget), times lognormal by seed with
// heavy-tailed own noise (t, 3 degrees of freedom: one seed in ten or so is
// far off) and a 5% position effect on whichever runs second in the round
// (mirrored pairs of rounds). After every round from the second, the sign
// test at the race's level for that look (race_level, one test). Over the
// whole race the true best must be dropped in at most alpha (5%) of the
// races. The price of a distribution-free test under the race's alpha
// spending (a look k's level 1 - alpha 6 / (pi^2 k^2)): no drop before
// about 8 rounds (0 false drops in 2000 races: far below alpha), a
// candidate 2x slower (capped, a censored seed known slower, in most rounds)
// dropped within 20 rounds in 87% of races, after 13 on average, one 1.5x
// slower in 49%. A race on time to target needs this test and
// many cheap rounds (capping), or a more powerful censored rank test.
TEST_CASE("a race's sign-test drops on time to target hold alpha under capping",
          "[host][target][sim]") {
  std::mt19937 rng(4242);
  std::normal_distribution<double> z(0, 1);
  std::student_t_distribution<double> t3(3);
  auto race = [&](double slowdown, int* first_drop) {
    std::vector<TargetTime> leader, candidate;
    for (int r = 0; r < 20; ++r) {
      const double pace = 0.15 * z(rng);
      const double second = (r / 2) % 2 == 0 ? 1.05 : 1.0;  // position: leader second, or not
      const double third = 130 * std::exp(pace + 0.1 * t3(rng));
      const double tl = 100 * second * std::exp(pace + 0.15 * t3(rng));
      const double tc = 100 * slowdown * (2.05 - second) * std::exp(pace + 0.15 * t3(rng));
      const double cap = std::min(1.5 * std::min({third, tl, tc}), 250.0);
      leader.push_back({r, std::min(tl, cap), tl > cap});
      candidate.push_back({r, std::min(tc, cap), tc > cap});
      if (r < 1) continue;
      const double level = race_level(0.05, r, 1);
      if (slower_by_sign(leader, candidate).p <= 1 - level) {
        *first_drop = r + 1;
        return true;
      }
    }
    return false;
  };
  const int races = 2000;
  int false_drops = 0, drops2 = 0, drops15 = 0, rounds_to_drop = 0;
  for (int i = 0; i < races; ++i) {
    int at = 0;
    false_drops += race(1.0, &at);
    if (race(2.0, &at)) {
      ++drops2;
      rounds_to_drop += at;
    }
    drops15 += race(1.5, &at);
  }
  INFO("the true best dropped: " << rate(false_drops, races)
                                 << "; a 2x slower one dropped: " << rate(drops2, races)
                                 << ", after " << (drops2 > 0 ? rounds_to_drop / drops2 : 0)
                                 << " rounds on average; a 1.5x slower one: "
                                 << rate(drops15, races));
  CHECK(false_drops <= 0.05 * races);
  CHECK(drops2 >= 0.8 * races);
  CHECK(drops15 >= 0.4 * races);
}

namespace {

TargetTime diverged_at(int64_t repeat, double t) { return {repeat, t, true, true}; }

}  // namespace

TEST_CASE("a diverged trial never reaches: no median from the others, the ratio known slower",
          "[host][target]") {
  // 6 of 10 seeds diverged early (at 0.8 s), 4 reached in 8.5 s: the old
  // Kaplan-Meier median was 8.5 s (the successes' own), here there is none.
  std::vector<TargetTime> d, b;
  for (int64_t r = 0; r < 10; ++r) {
    d.push_back(r < 6 ? diverged_at(r, 0.8) : TargetTime{r, 8.5, false});
    b.push_back({r, 10.0, false});
  }
  const TimeSummary s = summarise_times(d);
  CHECK_FALSE(s.median);
  CHECK(std::isinf(s.median_low));  // not even a bound: "never"
  CHECK(s.diverged == 6);
  CHECK(s.reached == 4);
  CHECK(s.budget == 0);  // a diverged trial's time is no budget
  // Against a baseline that reached on every seed: 6 seeds known slower (an
  // infinite ratio), 4 faster; the point is the median, +infinity.
  const auto ratio = paired_time_ratio(b, d);
  REQUIRE(ratio);
  CHECK(std::isinf(ratio->ratio));
  CHECK(ratio->known == 10);
  REQUIRE(ratio->interval);
  CHECK(ratio->low < 1);  // 4 faster seeds: the interval spans 1
  CHECK(std::isinf(ratio->high));
  // The drop test counts the diverged seeds as slower.
  CHECK(slower_by_sign(b, d).slower == 6);
  // A config diverged where the baseline was censored: at least as slow.
  const auto bounded = paired_time_ratio({{0, 10.0, true}}, {diverged_at(0, 1.0)});
  REQUIRE(bounded);
  CHECK(bounded->known == 0);
}

TEST_CASE("divergence in most seeds never gives a finite median (simulated, km_divergence)",
          "[host][target][sim]") {
  // The km_divergence scenario: B reaches in 10 s x exp(pace +
  // 0.15 z); D diverges early with probability 0.6, else reaches 15% faster;
  // 10 seeds, pace sd 0.2. Where over half of D's seeds diverged, D must get
  // no median (the shipped Kaplan-Meier gave one in 98.9% of such sweeps) and
  // so never be first to the target.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z;
  std::uniform_real_distribution<double> u;
  int mostly_diverged = 0, finite = 0, picked = 0;
  for (int sweep = 0; sweep < 400; ++sweep) {
    std::vector<TargetTime> b, d;
    int diverged = 0;
    for (int64_t r = 0; r < 10; ++r) {
      const double pace = 0.2 * z(rng);
      b.push_back({r, 10 * std::exp(pace + 0.15 * z(rng)), false});
      if (u(rng) < 0.6) {
        d.push_back(diverged_at(r, 0.5 + u(rng)));
        ++diverged;
      } else {
        d.push_back({r, 8.5 * std::exp(pace + 0.15 * z(rng)), false});
      }
    }
    if (diverged <= 5) continue;
    ++mostly_diverged;
    const TimeSummary sd = summarise_times(d), sb = summarise_times(b);
    if (sd.median) ++finite;
    if (sd.median && (!sb.median || *sd.median < *sb.median)) ++picked;
  }
  INFO(mostly_diverged << " sweeps with over half of D diverged");
  REQUIRE(mostly_diverged > 150);
  CHECK(finite == 0);
  CHECK(picked == 0);
}
