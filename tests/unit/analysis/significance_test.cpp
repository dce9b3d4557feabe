// t quantiles, the verdicts and the geometric mean's interval. The paired,
// design-based interval compare uses is tested in ratio_model_test.cpp.
#include "analysis/significance.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace gpusweep::host;

TEST_CASE("t quantiles are those of Student's distribution", "[host][stats]") {
  CHECK(t_quantile(0.975, 1) == Approx(12.7062047).epsilon(1e-6));
  CHECK(t_quantile(0.975, 10) == Approx(2.2281389).epsilon(1e-6));
  CHECK(t_quantile(0.975, 1e6) == Approx(1.959966).epsilon(1e-5));
  CHECK(t_quantile(0.5, 7) == Approx(0).margin(1e-6));
}

TEST_CASE("a verdict is the side of 1 the interval lies on", "[host][stats]") {
  CHECK(verdict(RatioInterval{1.2, 1.1, 1.3}) == Verdict::faster);
  CHECK(verdict(RatioInterval{0.8, 0.7, 0.9}) == Verdict::slower);
  CHECK(verdict(RatioInterval{1.05, 0.99, 1.11}) == Verdict::no_difference);
  CHECK(std::string(to_string(Verdict::no_difference)) == "no significant difference");
}

TEST_CASE("a difference the interval shows but below the smallest effect is negligible",
          "[host][stats]") {
  // Two processes of one config 0.4% apart, consistently: excluded from 1,
  // but no change anyone tunes for.
  const RatioInterval tiny{1.004, 1.002, 1.006};
  CHECK(verdict(tiny) == Verdict::faster);  // with no smallest effect
  CHECK(verdict(tiny, kMinEffect) == Verdict::negligible);
  CHECK(verdict(RatioInterval{0.996, 0.994, 0.998}, kMinEffect) == Verdict::negligible);
  // Beyond it, either way (on the log scale: 1/1.02 is as far as 1.02).
  CHECK(verdict(RatioInterval{1.02, 1.015, 1.025}, kMinEffect) == Verdict::faster);
  CHECK(verdict(RatioInterval{1 / 1.02, 0.975, 0.985}, kMinEffect) == Verdict::slower);
  // An interval that holds 1 is no difference, whatever the point.
  CHECK(verdict(RatioInterval{1.05, 0.99, 1.11}, kMinEffect) == Verdict::no_difference);
  CHECK(std::string(to_string(Verdict::negligible)) == "negligible difference");
}

TEST_CASE("the geometric mean's interval: its logs' t interval, as scipy gives it",
          "[host][stats]") {
  // scipy.stats.t.interval(0.95, 2, loc=2, scale=1/sqrt(3)) on the logs 1, 2, 3:
  // (-0.484138, 4.484138), exponentiated.
  const LogSummary s = log_summary({std::exp(1.0), std::exp(2.0), std::exp(3.0)});
  CHECK(s.log_mean == Approx(2));
  CHECK(s.log_se == Approx(1 / std::sqrt(3.0)));
  CHECK(s.low == Approx(std::exp(-0.4841377)).epsilon(1e-6));
  CHECK(s.high == Approx(std::exp(4.4841377)).epsilon(1e-6));
  // Its geometric mean lies inside, whatever the sample.
  std::mt19937_64 rng(71);
  std::lognormal_distribution<double> value(3, 0.4);
  for (size_t n : {2, 3, 17, 1000}) {
    std::vector<double> samples(n);
    for (auto& v : samples) v = value(rng);
    const LogSummary r = log_summary(samples);
    CHECK(r.low < std::exp(r.log_mean));
    CHECK(std::exp(r.log_mean) < r.high);
  }
  const LogSummary same = log_summary({5, 5, 5});  // no spread: the value itself
  CHECK(same.low == Approx(5));
  CHECK(same.high == Approx(5));
  CHECK(std::isnan(log_summary({5}).low));  // one sample: no interval
}
