// `gpusweep best` chooses by compare's figures, under constraints, with the
// baseline resolved like every other command's, and names ties.
#include "analysis/best.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace gpusweep::host;
using gpusweep::db::TrialStatus;
namespace db = gpusweep::db;

namespace {

Json settings_of(int batch) { return Json{{"batch_size", batch}, {"lr", 0.1}}; }

// One trial of config `index`, repeat `repeat`.
db::TrialRecord trial(int64_t index, int64_t repeat, const Json& settings, double throughput,
                      double memory, std::optional<double> quality,
                      TrialStatus status = TrialStatus::ok) {
  db::TrialRecord t;
  t.plan.config_index = index;
  t.plan.repeat = repeat;
  t.plan.config_json = settings.dump();
  t.status = status;
  db::Summary s;
  s.unit = "samples";
  s.throughput_median = throughput;
  s.step_time_median_s = 1 / throughput;
  s.peak_memory_bytes = memory;
  s.quality = quality;
  if (t.status == TrialStatus::ok) t.summary = s;
  return t;
}

// The trials' configs as gather_configs pools them: each ok trial a run of
// eight blocks around its throughput, paired by cycle within its repeat
// (a wiggle the configs share, so that pairing removes it).
std::vector<ConfigSamples> pooled(const std::vector<db::TrialRecord>& trials) {
  std::map<int64_t, ConfigSamples> by_index;
  for (const auto& t : trials) {
    ConfigSamples& c = by_index[t.plan.config_index];
    c.config_index = t.plan.config_index;
    c.config = Json::parse(t.plan.config_json);
    ++c.trials;
    if (t.status != TrialStatus::ok) {
      c.problem = "failed: boom";
      continue;
    }
    ++c.ok;
    RunSamples run;
    run.repeat = t.plan.repeat;
    run.group = "g" + std::to_string(t.plan.repeat);
    for (int k = 0; k < 8; ++k) {
      const double v =
          t.summary->throughput_median * (1 + 0.02 * std::sin(k + 3.0 * t.plan.repeat));
      run.values.push_back(v);
      run.cycles.push_back(k);
      c.throughput.push_back(v);
    }
    c.runs.push_back(run);
    const double peak = *t.summary->peak_memory_bytes;
    c.peak_memory_bytes = std::max(c.peak_memory_bytes.value_or(0), peak);
    c.unit = "samples";
  }
  std::vector<ConfigSamples> out;
  for (auto& [i, c] : by_index) out.push_back(c);
  return out;
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
      trial(0, 0, settings_of(32), 100, 1 * GiB, 0.90),
      trial(0, 1, settings_of(32), 110, 1 * GiB, 0.90),
      trial(1, 0, settings_of(64), 180, 3 * GiB, 0.89),
      trial(1, 1, settings_of(64), 200, 3 * GiB, 0.89),
      trial(2, 0, settings_of(128), 300, 9 * GiB, 0.80),
      trial(2, 1, settings_of(128), 0, 0, std::nullopt, TrialStatus::oom)};
  const SweepSpec spec = grid_spec();
  const auto configs = pooled(trials);

  const BestChoice fastest = choose_best(spec, trials, configs, Objective::throughput, {});
  REQUIRE(fastest.config_index == 2);
  CHECK(fastest.eligible == 3);
  CHECK(fastest.tied.empty());

  const BestChoice capped = choose_best(
      spec, trials, configs, Objective::throughput,
      {parse_constraint("peak_memory<8GiB"), parse_constraint("quality>=0.98*baseline")});
  REQUIRE(capped.config_index == 1);
  CHECK(capped.eligible == 2);
  // compare's figure: the median of both repeats' blocks pooled.
  CHECK(capped.metrics.at("throughput") == Approx(*config_throughput(configs[1])));
  CHECK(capped.baseline.at("throughput") == Approx(*config_throughput(configs[0])));
  REQUIRE(capped.ratio);
  CHECK(capped.ratio->low > 1.5);
  CHECK(capped.base == Json{{"lr", 0.1}, {"batch_size", 64}});

  const BestChoice smallest = choose_best(spec, trials, configs, Objective::peak_memory, {});
  CHECK(smallest.config_index == 0);
  CHECK(choose_best(spec, trials, configs, Objective::throughput,
                    {parse_constraint("peak_memory<1GB")})
            .eligible == 0);
}

TEST_CASE("best's baseline is the sweep's, not the first config, when the sweep names one",
          "[analysis]") {
  SweepSpec spec = grid_spec();
  spec.baseline = {{"batch_size", 64}};
  const std::vector<db::TrialRecord> trials = {trial(0, 0, settings_of(32), 100, 1e9, 0.90),
                                               trial(1, 0, settings_of(64), 200, 2e9, 0.95)};
  // Relative to config 2's quality (0.95), config 1's 0.90 is not within 1%.
  const BestChoice b = choose_best(spec, trials, pooled(trials), Objective::peak_memory,
                                   {parse_constraint("quality>=0.99*baseline")});
  CHECK(b.config_index == 1);
}

TEST_CASE(
    "best names configs it cannot tell from the fastest and keeps the baseline's "
    "settings among them",
    "[analysis]") {
  SweepSpec spec;
  spec.grid = {{"channels_last", {false, true}}, {"zero_grad_to_none", {true, false}}};
  auto s = [](bool cl, bool zg) { return Json{{"channels_last", cl}, {"zero_grad_to_none", zg}}; };
  std::vector<db::TrialRecord> trials;
  for (int64_t r = 0; r < 3; ++r) {
    const double wobble = 1 + 0.001 * static_cast<double>(r);
    trials.push_back(trial(0, r, s(false, true), 100 * wobble, 1e9, std::nullopt));
    trials.push_back(trial(1, r, s(false, false), 101 * wobble, 1e9, std::nullopt));
    trials.push_back(trial(2, r, s(true, true), 150 * wobble, 1e9, std::nullopt));
    // Faster by 0.2%: within compare's 1% minimum effect.
    trials.push_back(trial(3, r, s(true, false), 150.3 * wobble, 1e9, std::nullopt));
  }
  const BestChoice b = choose_best(spec, trials, pooled(trials), Objective::throughput, {});
  CHECK(b.leader == 3);
  CHECK(b.tied == std::vector<int64_t>{2, 3});
  // Config 3 changes one setting from the baseline, config 4 two.
  CHECK(b.config_index == 2);
  CHECK(b.base.at("zero_grad_to_none") == true);
  CHECK_FALSE(b.rule.empty());

  // A baseline among the ties is the pick: nothing is surely better.
  std::vector<db::TrialRecord> flat;
  for (int64_t r = 0; r < 3; ++r) {
    flat.push_back(trial(0, r, s(false, true), 100, 1e9, std::nullopt));
    flat.push_back(trial(1, r, s(false, false), 100.2, 1e9, std::nullopt));
  }
  SweepSpec two;
  two.grid = {{"zero_grad_to_none", {true, false}}};
  CHECK(choose_best(two, flat, pooled(flat), Objective::throughput, {}).config_index == 0);
}

TEST_CASE("best with a failed baseline gives no ratio, and says why nothing ran ok", "[analysis]") {
  const SweepSpec spec = grid_spec();
  const std::vector<db::TrialRecord> trials = {
      trial(0, 0, settings_of(32), 0, 0, std::nullopt, TrialStatus::failed),
      trial(1, 0, settings_of(64), 200, 2e9, 0.95)};
  const BestChoice b = choose_best(spec, trials, pooled(trials), Objective::throughput, {});
  CHECK(b.config_index == 1);
  CHECK_FALSE(b.ratio);
  CHECK(b.baseline_problem == "failed: boom");

  const std::vector<db::TrialRecord> none = {
      trial(0, 0, settings_of(32), 0, 0, std::nullopt, TrialStatus::failed)};
  const BestChoice nothing = choose_best(spec, none, pooled(none), Objective::throughput, {});
  CHECK_FALSE(nothing.config_index);
  CHECK(nothing.ran_ok == 0);
  CHECK(nothing.configs == 1);
}

TEST_CASE("a noisy config whose wide interval reaches the fastest's is no tie", "[analysis]") {
  SweepSpec spec;
  spec.grid = {{"batch_size", {32, 64, 128}}};
  std::vector<db::TrialRecord> trials;
  const double noisy[] = {70, 100, 130};
  for (int64_t r = 0; r < 3; ++r) {
    trials.push_back(trial(0, r, Json{{"batch_size", 32}}, 100, 1e9, std::nullopt));
    trials.push_back(trial(1, r, Json{{"batch_size", 64}}, noisy[r], 1e9, std::nullopt));
    trials.push_back(
        trial(2, r, Json{{"batch_size", 128}}, 130 + static_cast<double>(r), 2e9, std::nullopt));
  }
  const BestChoice b = choose_best(spec, trials, pooled(trials), Objective::throughput, {});
  CHECK(b.leader == 2);
  CHECK(b.tied.empty());
  CHECK(b.config_index == 2);
}
