// Claims in sweep files: parsing, validation against the sweep's configs,
// verdicts, and evaluation over synthetic measurements.
#include "analysis/claims.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"
#include "test_manifest.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

std::string with_claims(const std::string& claims) {
  return R"({"name": "c", "workload": "dqn",
    "grid": {"replay_on_device": [false, true], "precision": ["fp32", "fp16"]},
    "baseline": {"replay_on_device": false, "precision": "fp32"},
    "claims": )" +
         claims + "}";
}

std::string usage_error(const std::string& text) {
  try {
    const SweepSpec s = parse_sweep(text, "claims.json");
    validate_sweep(s, test::dqn_like_manifest());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Block values around a typical value, seeded: one run per repeat.
std::vector<RunSamples> runs(double typical, int repeats, int blocks, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(1.0, 0.02);
  std::vector<RunSamples> out(repeats);
  for (int r = 0; r < repeats; ++r) {
    out[r].repeat = r;
    for (int b = 0; b < blocks; ++b) out[r].values.push_back(typical * noise(rng));
  }
  return out;
}

}  // namespace

TEST_CASE("claims parse, round-trip through the stored spec and keep old hashes",
          "[host][claims]") {
  const SweepSpec s = parse_sweep(with_claims(R"([
    {"claim": "fp16 is 20-30% faster", "change": {"precision": "fp16"}, "expected": [1.2, 1.3],
     "source": "guide", "requires": ["tensor_cores"]},
    {"claim": "replay on device halves step time", "change": {"replay_on_device": true},
     "metric": "step_time", "expected": 0.5}])"),
                                  "claims.json");
  REQUIRE(s.claims.size() == 2);
  CHECK(s.claims[0].low == 1.2);
  CHECK(s.claims[0].high == 1.3);
  CHECK(s.claims[0].metric == "throughput");
  CHECK(s.claims[0].required_features == std::vector<std::string>{"tensor_cores"});
  CHECK(s.claims[1].metric == "step_time");
  CHECK(s.claims[1].low == 0.5);
  CHECK(s.claims[1].high == 0.5);
  validate_sweep(s, test::dqn_like_manifest());
  const SweepSpec again = parse_sweep(s.to_json().dump(), "stored");
  CHECK(again.to_json() == s.to_json());
  // A sweep without claims stores no "claims" key: its hash is unchanged.
  const SweepSpec none = parse_sweep(R"({"name": "c", "workload": "dqn"})", "x.json");
  CHECK_FALSE(none.to_json().contains("claims"));
}

TEST_CASE("bad claims are usage errors naming the claim and the fix", "[host][claims]") {
  CHECK_THAT(usage_error(with_claims(R"([{"claim": "x", "change": {"precision": "fp16"}}])")),
             Contains("claims.json: claims[0].expected: missing"));
  CHECK_THAT(usage_error(with_claims(
                 R"([{"claim": "x", "change": {"precision": "fp16"}, "expected": [1.3, 1.2]}])")),
             Contains("low above high"));
  CHECK_THAT(usage_error(with_claims(
                 R"([{"claim": "x", "change": {"precision": "fp16"}, "expected": -2}])")),
             Contains("positive ratio"));
  CHECK_THAT(usage_error(with_claims(R"([{"claim": "x", "change": {"precision": "fp16"},
               "expected": 2, "metric": "througput"}])")),
             Contains("did you mean 'throughput'"));
  CHECK_THAT(usage_error(with_claims(R"([{"claim": "x", "change": {"precision": "fp16"},
               "expected": 2, "requires": ["gpu"]}])")),
             Contains("unknown feature"));
  CHECK_THAT(usage_error(with_claims(R"([{"claim": "x", "change": {"precison": "fp16"},
               "expected": 2}])")),
             Contains("claims[0].change.precison") && Contains("did you mean 'precision'"));
  CHECK_THAT(usage_error(with_claims(R"([{"claim": "x", "change": {"precision": "bf16"},
               "expected": 2}])")),
             Contains("claims[0]") && Contains("matches 0"));
  CHECK_THAT(usage_error(with_claims(R"([{"claim": "x", "change": {"precision": "fp16"},
               "expected": 2, "extra": 1}])")),
             Contains("unknown claim key"));
}

TEST_CASE("claim verdicts: confirmed, overlaps, refuted, inconclusive", "[host][claims]") {
  // Confirmed only when the interval lies inside the claimed range.
  CHECK(claim_verdict(1.25, 1.22, 1.28, 1.2, 1.3) == ClaimVerdict::confirmed);
  // Meeting the range and reaching beyond it is compatible, not proof
  // (1.4 [1.28, 1.5] for a claimed 1.2-1.3 was once "confirmed").
  CHECK(claim_verdict(1.25, 1.18, 1.32, 1.2, 1.3) == ClaimVerdict::overlaps);
  CHECK(claim_verdict(1.4, 1.28, 1.5, 1.2, 1.3) == ClaimVerdict::overlaps);
  // A real gain, but far from the promised one.
  CHECK(claim_verdict(1.5, 1.4, 1.6, 3.0, 5.0) == ClaimVerdict::refuted);
  CHECK(claim_verdict(0.9, 0.85, 0.95, 1.2, 1.3) == ClaimVerdict::refuted);
  // Too wide to tell from no change.
  CHECK(claim_verdict(1.1, 0.95, 1.25, 1.2, 1.3) == ClaimVerdict::inconclusive);
  // A claim of no change is confirmed by an interval around 1.
  CHECK(claim_verdict(1.01, 0.97, 1.05, 0.95, 1.05) == ClaimVerdict::confirmed);
  // No interval: a point decides nothing.
  CHECK(claim_verdict(1.25, NAN, NAN, 1.2, 1.3) == ClaimVerdict::inconclusive);
  CHECK(claim_verdict(1.1, NAN, NAN, 1.2, 1.3) == ClaimVerdict::inconclusive);
}

TEST_CASE("claims are evaluated against the two configs they name", "[host][claims]") {
  SweepSpec s = parse_sweep(with_claims(R"([
    {"claim": "device replay 1.5x", "change": {"replay_on_device": true}, "expected": [1.4, 1.6]},
    {"claim": "device replay 3-5x", "change": {"replay_on_device": true}, "expected": [3, 5]},
    {"claim": "fp16 20-30%", "change": {"precision": "fp16"}, "expected": [1.2, 1.3]},
    {"claim": "fp16 on tensor cores", "change": {"precision": "fp16"}, "expected": [1.2, 1.3],
     "requires": ["tensor_cores"]},
    {"claim": "less transfer time", "change": {"replay_on_device": true}, "expected": [0.2, 0.4],
     "metric": "transfer_time"},
    {"claim": "XLA 5-15%", "expected": [1.05, 1.15], "requires": ["xla"]},
    {"claim": "memory halves", "change": {"replay_on_device": true}, "expected": 0.5,
     "metric": "peak_memory"},
    {"claim": "step time", "change": {"replay_on_device": true}, "metric": "step_time",
     "expected": [0.6, 0.7]},
    {"claim": "step time -10%", "change": {"replay_on_device": true}, "metric": "step_time",
     "expected": [0.85, 0.95]},
    {"claim": "slower", "change": {"replay_on_device": true}, "expected": [0.5, 0.6]}])"),
                            "claims.json");
  const auto manifest = test::dqn_like_manifest();
  validate_sweep(s, manifest);
  const auto configs = expand_configs(s, manifest);
  auto values_of = [](const Json& config, const std::string& metric) {
    MetricRuns m;
    const bool device = config["replay_on_device"].get<bool>();
    const bool fp16 = config["precision"] == "fp16";
    if (fp16) {
      m.problem = "skipped: fp16 needs CUDA; device is cpu";
      return m;
    }
    if (metric == "throughput") m.runs = runs(device ? 150.0 : 100.0, 3, 10, device ? 1 : 2);
    if (metric == "step_time") m.runs = runs(device ? 1 / 150.0 : 1 / 100.0, 3, 10, device ? 3 : 4);
    // peak memory: not reported
    return m;
  };
  const auto results = evaluate_claims(s, configs, Features{false}, values_of);
  REQUIRE(results.size() == 10);
  CHECK(results[0].verdict == ClaimVerdict::confirmed);
  REQUIRE(results[0].ratio);
  CHECK(*results[0].ratio == Approx(1.5).epsilon(0.03));
  CHECK(results[0].low < 1.5);
  CHECK(results[0].high > 1.5);
  CHECK(results[1].verdict == ClaimVerdict::refuted);
  CHECK(results[1].reason == "the right direction, less than claimed");
  CHECK(results[2].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(results[2].reason,
             Contains("changed config did not run") && Contains("fp16 needs CUDA"));
  CHECK(results[3].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(results[3].reason, Contains("Tensor Cores"));
  CHECK(results[4].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(results[4].reason, Contains("only with a GPU"));
  CHECK(results[5].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(results[5].reason, Contains("XLA"));
  CHECK(results[6].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(results[6].reason, Contains("reports no peak memory"));
  CHECK(results[7].verdict == ClaimVerdict::confirmed);
  CHECK(*results[7].ratio == Approx(100.0 / 150.0).epsilon(0.03));
  CHECK(results[8].verdict == ClaimVerdict::refuted);
  CHECK(results[8].reason == "a larger change than claimed");
  CHECK(results[9].verdict == ClaimVerdict::refuted);
  CHECK_THAT(results[9].reason, Contains("the opposite of the claim") && Contains("rose"));
  // With a GPU the transfer-time claim is measured where the trials report
  // their host-to-device time (the stat phase_host_to_device_s), and is
  // judged like any other ratio: here 0.3 of the host path's.
  auto with_transfer = [&](const Json& config, const std::string& metric) {
    if (metric != "transfer_time") return values_of(config, metric);
    MetricRuns m;
    m.runs = runs(config["replay_on_device"].get<bool>() ? 0.3 : 1.0, 3, 10, 5);
    return m;
  };
  const auto measured = evaluate_claims(s, configs, Features{true}, with_transfer);
  CHECK(measured[4].verdict == ClaimVerdict::confirmed);
  REQUIRE(measured[4].ratio);
  CHECK(*measured[4].ratio == Approx(0.3).epsilon(0.03));
  // ...and without that stat, it says which figure is missing.
  const auto with_gpu = evaluate_claims(s, configs, Features{true}, values_of);
  CHECK(with_gpu[4].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(with_gpu[4].reason, Contains("reports no transfer_time"));
}

TEST_CASE("a claim that requires Tensor Cores is not measured on a GPU without them",
          "[host][claims]") {
  SweepSpec s = parse_sweep(with_claims(R"([
    {"claim": "fp16 on tensor cores", "change": {"precision": "fp16"}, "expected": [1.2, 1.3],
     "requires": ["tensor_cores"]},
    {"claim": "fp16 anywhere", "change": {"precision": "fp16"}, "expected": [1.2, 1.3]}])"),
                            "claims.json");
  const auto manifest = test::dqn_like_manifest();
  validate_sweep(s, manifest);
  const auto configs = expand_configs(s, manifest);
  auto values_of = [](const Json& config, const std::string&) {
    MetricRuns m;
    m.runs = runs(config["precision"] == "fp16" ? 125.0 : 100.0, 3, 10, 1);
    return m;
  };
  // A Pascal GPU (6.1): CUDA, no Tensor Cores.
  Features pascal;
  pascal.cuda = true;
  auto results = evaluate_claims(s, configs, pascal, values_of);
  REQUIRE(results.size() == 2);
  CHECK(results[0].verdict == ClaimVerdict::not_measurable);
  CHECK_THAT(results[0].reason, Contains("Tensor Cores") && Contains("7.0"));
  CHECK(results[1].verdict == ClaimVerdict::confirmed);
  // With Tensor Cores the same claim is measured.
  Features ampere = pascal;
  ampere.tensor_cores = true;
  results = evaluate_claims(s, configs, ampere, values_of);
  CHECK(results[0].verdict == ClaimVerdict::confirmed);
}

TEST_CASE("a tune run's claims are judged at the level of its confirmation rounds",
          "[host][claims]") {
  // A tune run stops its confirmation once precise, as precision runs do:
  // its claims' intervals are at the sequential level, as compare's are,
  // not at 95%; the same figures from a plain run
  // give the narrower 95% interval.
  const std::string claims =
      R"([{"claim": "device replay 1.5x", "change": {"replay_on_device": true}, "expected": [1.4, 1.6]}])";
  std::string tuned = with_claims(claims);
  tuned.insert(tuned.size() - 1, R"(, "tune": {"race": true})");
  const auto manifest = test::dqn_like_manifest();
  auto values_of = [](const Json& config, const std::string& metric) {
    MetricRuns m;
    const bool device = config["replay_on_device"].get<bool>();
    if (config["precision"] == "fp16") {
      m.problem = "skipped";
      return m;
    }
    if (metric == "throughput") m.runs = runs(device ? 150.0 : 100.0, 3, 10, device ? 1 : 2);
    return m;
  };
  const auto judge = [&](const std::string& text) {
    const SweepSpec s = parse_sweep(text, "claims.json");
    validate_sweep(s, manifest);
    const auto results =
        evaluate_claims(s, expand_configs(s, manifest), Features{false}, values_of);
    REQUIRE(results.size() == 1);
    REQUIRE(results[0].ratio);
    return results[0];
  };
  const ClaimResult plain = judge(with_claims(claims));
  const ClaimResult tune = judge(tuned);
  CHECK(*tune.ratio == Approx(*plain.ratio));
  CHECK(tune.low < plain.low);
  CHECK(tune.high > plain.high);
}
