// Quality against the baseline's with its uncertainty, on
// simulated evaluations with a known true change.
#include "analysis/quality.hpp"

#include <gpusweep/random.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <map>

using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

// n repeats whose evaluations average `mean` with standard error `se` each
// (the plugin reports that se); repeats differ only by the evaluation's noise.
std::vector<QualitySample> repeats(gpusweep::random::SplitMix64& rng, int n, double mean,
                                   double se) {
  std::vector<QualitySample> out;
  for (int i = 0; i < n; ++i) out.push_back({gpusweep::random::normal(rng, mean, se), se});
  return out;
}

// How often each verdict comes out over many simulated comparisons.
std::map<QualityVerdict, int> verdicts(double true_change, double se, int n, int runs) {
  gpusweep::random::SplitMix64 rng(7);
  std::map<QualityVerdict, int> count;
  for (int i = 0; i < runs; ++i) {
    const auto q = compare_quality(repeats(rng, n, 100, se),
                                   repeats(rng, n, 100 * (1 + true_change), se), true, 0.01);
    REQUIRE(q);
    ++count[q->verdict];
  }
  return count;
}

}  // namespace

TEST_CASE("non-inferiority is a test: at the margin it is passed at most 5% of the time",
          "[host][quality]") {
  // True change exactly -1% (the margin), noise of 1% per evaluation: a point
  // comparison would call half of these non-inferior.
  for (int n : {1, 3}) {
    const auto at_margin = verdicts(-0.01, 1.0, n, 4000);
    INFO("repeats " << n << ": non-inferior " << at_margin.at(QualityVerdict::non_inferior));
    CHECK(at_margin.at(QualityVerdict::non_inferior) <= 0.05 * 4000 * 1.2);
    // With one repeat the test is exact (5%); with several it takes the
    // larger of two estimates of the same noise, so it passes fewer.
    if (n == 1) CHECK(at_margin.at(QualityVerdict::non_inferior) >= 0.05 * 4000 * 0.8);
  }
  // No change and a small noise: non-inferior nearly always; a 5% loss:
  // inferior nearly always.
  CHECK(verdicts(0.0, 0.2, 3, 1000)[QualityVerdict::non_inferior] >= 950);
  CHECK(verdicts(-0.05, 0.2, 3, 1000)[QualityVerdict::inferior] >= 950);
}

TEST_CASE("a noisy quality metric is inconclusive, not non-inferior by its mean",
          "[host][quality]") {
  // A case once called non-inferior by its mean: dqn's greedy return over
  // 10 episodes (se ~30 around 200); the config's mean is even higher.
  const auto q = compare_quality({{200, 30}}, {{210, 30}}, true, 0.01);
  REQUIRE(q);
  CHECK(q->change == Approx(0.05));
  CHECK(q->verdict == QualityVerdict::inconclusive);
  CHECK(q->low < -0.2);
  CHECK(q->high > 0.3);
}

TEST_CASE("the repeats' spread counts when it exceeds the evaluations' standard errors",
          "[host][quality]") {
  // Seeds that train differently: the repeats spread far more than one
  // evaluation's error says.
  const std::vector<QualitySample> base = {{90, 0.1}, {100, 0.1}, {110, 0.1}};
  const std::vector<QualitySample> config = {{92, 0.1}, {101, 0.1}, {112, 0.1}};
  const auto q = compare_quality(base, config, true, 0.01);
  REQUIRE(q);
  CHECK(q->verdict == QualityVerdict::inconclusive);
  CHECK(q->high - q->low > 0.2);
}

TEST_CASE("evaluation errors a little above the repeats' spread do not narrow the bound",
          "[host][quality]") {
  // The shape of a dqn A/A check (the same build twice) whose guard called
  // the return 16.6% worse: three paired repeats, their differences -40, -15
  // and -24, each evaluation's standard error about 10.6. Those errors make
  // a variance a little above the differences' spread, and read with the
  // normal's quantile they gave a bound 4.3x narrower than t's with 2
  // degrees of freedom at the check's alpha (1.5% over 4 configs).
  const std::vector<QualitySample> base = {{164, 10.6, 0}, {165, 10.6, 1}, {145, 10.6, 2}};
  const std::vector<QualitySample> head = {{124, 10.6, 0}, {150, 10.6, 1}, {121, 10.6, 2}};
  const double alpha = 0.015 / 4;
  const auto q = compare_quality(base, head, true, 0.01, alpha);
  REQUIRE(q);
  CHECK(q->change == Approx(-79.0 / 474).epsilon(1e-6));
  CHECK(q->verdict == QualityVerdict::inconclusive);
  // The bound is the spread's: t(2) at alpha times the differences' standard
  // error (sd 12.66 over sqrt(3)), over the base's mean.
  CHECK(q->high - q->change == Approx(11.48 * 12.662 / std::sqrt(3.0) / 158).epsilon(0.01));
}

TEST_CASE("without a standard error: one repeat gives no verdict, agreeing repeats say so",
          "[host][quality]") {
  const auto one = compare_quality({{1.0, NAN}}, {{1.0, NAN}}, true, 0.01);
  REQUIRE(one);
  CHECK(one->verdict == QualityVerdict::inconclusive);
  CHECK(std::isnan(one->low));
  CHECK_THAT(one->note, Contains("no interval"));
  const auto same =
      compare_quality({{2.0, NAN}, {2.0, NAN}}, {{1.99, NAN}, {1.99, NAN}}, true, 0.01);
  REQUIRE(same);
  CHECK(same->verdict == QualityVerdict::non_inferior);
  CHECK(same->low == Approx(-0.005));
  CHECK_THAT(same->note, Contains("says nothing of other seeds"));
}

TEST_CASE("lower-is-better quality: a lower loss is an improvement", "[host][quality]") {
  const auto q = compare_quality({{2.0, 0.001}}, {{1.8, 0.001}}, false, 0.01);
  REQUIRE(q);
  CHECK(q->change == Approx(0.1));
  CHECK(q->verdict == QualityVerdict::non_inferior);
  const auto worse = compare_quality({{2.0, 0.001}}, {{2.2, 0.001}}, false, 0.01);
  REQUIRE(worse);
  CHECK(worse->verdict == QualityVerdict::inferior);
}

TEST_CASE(
    "sides that ran the same repeats are judged on their paired differences: the seed's share "
    "of the noise leaves, the test keeps its level",
    "[host][quality][sim]") {
  // Each repeat's seed moves both sides alike by sd 5 (around 100: how well
  // that seed trains); the config's own noise adds sd 0.3 each, and each
  // evaluation reports se 0.2. 3 repeats.
  gpusweep::random::SplitMix64 rng(281);
  auto run = [&rng](double change, bool paired) {
    std::vector<QualitySample> base, config;
    for (int r = 0; r < 3; ++r) {
      const double seed = gpusweep::random::normal(rng, 0, 5);
      base.push_back({100 + seed + gpusweep::random::normal(rng, 0, 0.3), 0.2, paired ? r : -1});
      config.push_back({100 * (1 + change) + seed + gpusweep::random::normal(rng, 0, 0.3), 0.2,
                        paired ? r : -1});
    }
    const auto q = compare_quality(base, config, true, 0.01);
    REQUIRE(q);
    return q->verdict;
  };
  const int runs = 2000;
  int paired_ok = 0, unpaired_ok = 0, at_margin = 0;
  for (int i = 0; i < runs; ++i) {
    paired_ok += run(0.0, true) == QualityVerdict::non_inferior;
    unpaired_ok += run(0.0, false) == QualityVerdict::non_inferior;
    // Exactly at the margin: called non-inferior at most 5% of the time.
    at_margin += run(-0.01, true) == QualityVerdict::non_inferior;
  }
  INFO("no change called non-inferior: paired " << paired_ok << ", unpaired " << unpaired_ok
                                                << " of " << runs << "; at the margin (paired) "
                                                << at_margin);
  CHECK(paired_ok >= 0.7 * runs);    // the pairs' noise (0.42) is well inside the margin (1)
  CHECK(unpaired_ok <= 0.1 * runs);  // unpaired, the seeds' spread (5) swamps it
  CHECK(at_margin <= 0.05 * runs * 1.2);
}
