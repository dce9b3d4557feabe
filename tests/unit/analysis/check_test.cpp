// A check's verdicts on made-up runs whose head/base ratio is known: each
// verdict of the rule, the tolerance's two roles, the quality and memory
// guards, failed builds, and which configs another round runs.
#include "analysis/check.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

// One config under one build: `repeats` interleaved repeats of 8 blocks,
// throughput 100 x ratio, each repeat's process off by a seeded draw of sd
// `process_sd`, each block by `block_sd`; the drift of a cycle is the same
// for every config (seeded by repeat and cycle alone), as taking turns makes it.
ConfigSamples side(int64_t index, const char* build, double setting, double ratio, int repeats,
                   double process_sd, double block_sd, uint64_t seed) {
  ConfigSamples c;
  c.config_index = index;
  c.config = {{"build", build}, {"spin_us", setting}};
  c.unit = "steps";
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (int r = 0; r < repeats; ++r) {
    RunSamples run;
    run.repeat = r;
    run.group = "g" + std::to_string(r);
    const double process = process_sd * z(rng);
    for (int i = 0; i < 8; ++i) {
      std::mt19937_64 shared(static_cast<uint64_t>(1000 * r + i));
      // A distribution of its own: z keeps a cached draw of rng's.
      const double drift = 0.05 * std::normal_distribution<double>(0, 1)(shared);
      run.values.push_back(100 * ratio * std::exp(process + drift + block_sd * z(rng)));
      run.cycles.emplace_back(i);
      c.throughput.push_back(run.values.back());
    }
    c.runs.push_back(run);
    ++c.trials;
    ++c.ok;
  }
  return c;
}

// A pair of one setting: base at 1, head at `ratio`.
std::vector<ConfigSamples> pair(double ratio, int repeats = 4, double process_sd = 0.002,
                                uint64_t seed = 1) {
  return {side(0, kBaseBuild, 300, 1, repeats, process_sd, 0.002, seed),
          side(1, kHeadBuild, 300, ratio, repeats, process_sd, 0.002, seed + 7)};
}

// The verdicts at a 2% tolerance, whatever the default.
CheckOptions two_percent() {
  CheckOptions o;
  o.tolerance = 0.02;
  return o;
}

CheckPair judge(const std::vector<ConfigSamples>& configs, CheckOptions o = two_percent()) {
  const auto pairs = check_pairs(configs, o);
  REQUIRE(pairs.size() == 1);
  return pairs.front();
}

}  // namespace

TEST_CASE("check calls a sure slowdown beyond the tolerance a regression, and one within it not") {
  const auto slower = pair(0.95);
  const CheckPair r = judge(slower);
  CHECK(r.verdict == CheckVerdict::regression);
  CHECK(r.throughput == CheckVerdict::regression);
  REQUIRE(r.ratio);
  CHECK(r.ratio->ratio == Approx(0.95).epsilon(0.01));
  CHECK_THAT(r.reason, Contains("% slower (interval "));
  CHECK_THAT(r.reason, Contains("slower beyond the 2.0% tolerance"));
  // The same data against a wider tolerance: sure, but too small to block on.
  CheckOptions wide = two_percent();
  wide.tolerance = 0.08;
  CHECK(judge(slower, wide).verdict == CheckVerdict::no_regression);
  // 1% slower, known to within a fraction of a percent: no regression.
  const CheckPair small = judge(pair(0.99));
  CHECK(small.ratio->high < 1);
  CHECK(small.verdict == CheckVerdict::no_regression);
  CHECK_THAT(small.reason, Contains("a slowdown beyond 2.0% ruled out"));
}

TEST_CASE("check calls no regression until the whole interval is past the threshold") {
  // 3% slower, known to about ±1.5%: the estimate is past 2%, the interval
  // is not, so it is not yet a regression.
  const CheckPair r = judge(pair(0.97, 3, 0.006, 5));
  REQUIRE(r.ratio);
  CHECK(r.ratio->ratio < 0.98);
  CHECK(r.ratio->high > 0.98);
  CHECK(r.verdict == CheckVerdict::inconclusive);
  // Two repeats are too few for any verdict, however clear.
  const CheckPair two = judge(pair(0.9, 2));
  CHECK(two.verdict == CheckVerdict::inconclusive);
  CHECK_THAT(two.reason, Contains("fewer than 3 repeats of both builds paired yet"));
}

TEST_CASE("check calls a sure speedup beyond the tolerance an improvement") {
  const CheckPair r = judge(pair(1.06));
  CHECK(r.verdict == CheckVerdict::improvement);
  CHECK_THAT(r.reason, Contains("% faster (interval "));
  CHECK(r.ratio->ratio == Approx(1.06).epsilon(0.01));
  CHECK(overall({r}) == CheckVerdict::no_regression);
}

TEST_CASE("check leaves a pair inconclusive while its interval spans the tolerance") {
  // 5% slower, but processes that differ by 5%: three repeats cannot tell.
  const CheckPair r = judge(pair(0.95, 3, 0.05, 3));
  REQUIRE(r.ratio);
  CHECK(r.ratio->low < 0.98);
  CHECK(r.ratio->high > 1);
  CHECK(r.verdict == CheckVerdict::inconclusive);
  CHECK_THAT(r.reason, Contains("not yet sure"));
  CHECK(overall({r}) == CheckVerdict::inconclusive);
  // No change at all, as noisy: a slowdown beyond 2% is not ruled out either.
  CHECK(judge(pair(1.0, 3, 0.05, 3)).verdict == CheckVerdict::inconclusive);
}

TEST_CASE("check's quality and memory guards make a config a regression") {
  auto configs = pair(1.0);
  for (auto& c : configs) c.higher_is_better = true;
  for (int r = 0; r < 4; ++r) {
    configs[0].quality.push_back({0.90 + 0.001 * r, 0.001, r});
    configs[1].quality.push_back({0.80 + 0.001 * r, 0.001, r});
  }
  const CheckPair worse = judge(configs);
  CHECK(worse.throughput == CheckVerdict::no_regression);
  CHECK(worse.quality_loss);
  CHECK(worse.verdict == CheckVerdict::regression);
  CHECK_THAT(worse.reason, Contains("quality 11.1% worse, beyond the margin 1.0%"));
  // The same quality on both sides passes.
  configs[1].quality = configs[0].quality;
  CHECK(judge(configs).verdict == CheckVerdict::no_regression);

  configs[0].peak_memory_bytes = 1000;
  configs[1].peak_memory_bytes = 1200;
  const CheckPair bigger = judge(configs);
  CHECK(bigger.memory_growth);
  CHECK(bigger.verdict == CheckVerdict::regression);
  CHECK_THAT(bigger.reason, Contains("peak memory 20.0% more, beyond 10.0%"));
  configs[1].peak_memory_bytes = 1050;
  CHECK(judge(configs).verdict == CheckVerdict::no_regression);
}

TEST_CASE("check calls a head whose every trial failed a regression, a failed base inconclusive") {
  auto configs = pair(1.0);
  configs[1].runs.clear();
  configs[1].ok = 0;
  configs[1].problem = "crashed: SIGSEGV";
  const CheckPair broken = judge(configs);
  CHECK(broken.verdict == CheckVerdict::regression);
  CHECK_THAT(broken.reason, Contains("every head trial failed (crashed: SIGSEGV)"));
  std::swap(configs[0], configs[1]);
  configs[0].config["build"] = kBaseBuild;
  configs[1].config["build"] = kHeadBuild;
  CHECK(judge(configs).verdict == CheckVerdict::inconclusive);
  // Nothing more to learn from either: the look stops both.
  const PrecisionStatus s = check_status(configs, two_percent());
  CHECK(s.done);
}

TEST_CASE("check pairs configs by their settings without the build, and runs open ones again") {
  // Two settings: 300 decided (5% slower), 600 still open (noisy).
  std::vector<ConfigSamples> configs = {
      side(0, kBaseBuild, 300, 1, 3, 0.002, 0.002, 1),
      side(1, kBaseBuild, 600, 1, 3, 0.05, 0.002, 2),
      side(2, kHeadBuild, 300, 0.95, 3, 0.002, 0.002, 3),
      side(3, kHeadBuild, 600, 0.95, 3, 0.05, 0.002, 4),
  };
  const auto pairs = check_pairs(configs, two_percent());
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0].config == Json{{"spin_us", 300}});
  CHECK(pairs[0].base->config_index == 0);
  CHECK(pairs[0].head->config_index == 2);
  CHECK(pairs[1].base->config_index == 1);
  CHECK(pairs[1].head->config_index == 3);
  CHECK(pairs[0].verdict == CheckVerdict::regression);
  CHECK(pairs[1].verdict == CheckVerdict::inconclusive);
  CHECK(overall(pairs) == CheckVerdict::regression);

  const PrecisionStatus s = check_status(configs, two_percent());
  CHECK_FALSE(s.done);
  REQUIRE(s.configs.size() == 4);
  // Both builds of the decided config are done; both of the open one run again.
  CHECK(s.configs[0].done());
  CHECK(s.configs[2].done());
  CHECK_FALSE(s.configs[1].done());
  CHECK_FALSE(s.configs[3].done());
  CHECK(s.widest_config == 3);
  CHECK_THAT(check_summary(s), Contains("1 of 2 configs decided; widest open ±"));
  // Done at an earlier look, it stays done whatever this look says.
  CHECK(check_status(configs, two_percent(), {1}).done);
  // A config whose head is not planned yet is no pair.
  configs.pop_back();
  CHECK(check_pairs(configs, two_percent()).size() == 1);
}

TEST_CASE("check's options read back from a stored check") {
  const CheckOptions o =
      check_options(Json{{"tolerance", 0.03}, {"memory_tolerance", 0.2}, {"budget_s", 60}});
  CHECK(o.tolerance == 0.03);
  CHECK(o.memory_tolerance == 0.2);
  CHECK(o.max_quality_loss == 0.01);
  CHECK(check_options(Json()).tolerance == kDefaultCheckTolerance);
  CHECK(without_build(Json{{"build", "head"}, {"a", 1}}) == Json{{"a", 1}});
}

TEST_CASE("check's quality guard spends its error over the check's configs") {
  // Head's quality 3% lower, repeat by repeat 2-4%: shown worse beyond the
  // 1% margin for a check of one config, not once four configs share the
  // error (each might be the one that was unlucky).
  const double loss[] = {0.02, 0.04, 0.03, 0.03};
  auto with_quality = [&](std::vector<ConfigSamples> configs) {
    for (auto& c : configs) {
      c.higher_is_better = true;
      for (int r = 0; r < 4; ++r) {
        const bool head = c.config["build"] == kHeadBuild;
        c.quality.push_back({head ? 1 - loss[r] : 1.0, NAN, r});
      }
    }
    return configs;
  };
  const auto one = check_pairs(with_quality(pair(1.0)), two_percent());
  REQUIRE(one.size() == 1);
  CHECK(one[0].quality_loss);
  std::vector<ConfigSamples> four;
  for (int k = 0; k < 4; ++k) {
    four.push_back(side(k, kBaseBuild, 100.0 * (k + 1), 1, 4, 0.002, 0.002, 10 + k));
    four.push_back(side(4 + k, kHeadBuild, 100.0 * (k + 1), 1, 4, 0.002, 0.002, 20 + k));
  }
  const auto pairs = check_pairs(with_quality(four), two_percent());
  REQUIRE(pairs.size() == 4);
  for (const auto& p : pairs) {
    CHECK_FALSE(p.quality_loss);
    CHECK(p.verdict == CheckVerdict::no_regression);
  }
}
