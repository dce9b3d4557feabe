// The race's steps one at a time (analysis/race_state.hpp), on a few
// hand-made trials: what each step of a look decides from the state the
// steps before it left. The whole race's behaviour is in race_test.cpp and
// race_time_test.cpp.
#include "analysis/race_state.hpp"
#include "spec/tune.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

using namespace gpusweep;
using namespace gpusweep::host;
using gpusweep::host::detail::RaceState;

namespace {

// batch_size x precision: six configs.
struct Space {
  PluginManifest manifest = PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "sim", "version": "1.0.0", "unit": "samples",
    "params": [
      {"name": "batch_size", "type": "int", "default": 16, "min": 1, "max": 4096},
      {"name": "precision", "type": "string", "default": "fp32", "choices": ["fp32", "fp16"]}
    ]})"));
  SweepSpec spec = parse_sweep(R"({"name": "sim", "workload": "sim",
    "grid": {"batch_size": [16, 32, 64], "precision": ["fp32", "fp16"]}})",
                               "sim.json");
  TuneSpace space{spec, manifest};

  uint64_t config(int batch, const char* precision) const {
    Json c = space.config(0);
    c["batch_size"] = batch;
    c["precision"] = precision;
    return *space.index_of(c);
  }
};

// An ok trial of config c in round r: three blocks near `value` (a little
// spread, so that intervals have a width), and its quality when given.
RaceTrial ok(uint64_t c, int64_t r, double value, std::optional<double> quality = std::nullopt) {
  RaceTrial t;
  t.config = c;
  t.round = r;
  for (int b = 0; b < 3; ++b) {
    t.values.push_back(value * (1 + 0.002 * std::sin(static_cast<double>(7 * r + 3 * b + c))));
  }
  if (quality) t.metrics["quality"] = *quality;
  return t;
}

RaceTrial failed(uint64_t c, int64_t r, RaceTrial::Outcome outcome, const std::string& reason) {
  RaceTrial t;
  t.config = c;
  t.round = r;
  t.outcome = outcome;
  t.reason = reason;
  return t;
}

// Rounds 0..rounds-1 of each (config, value) pair. swing: each trial is this
// much above or below its value, by turns over rounds and configs, so that
// the ratios of rounds vary (a test over few rounds cannot tell).
std::vector<RaceTrial> rounds_of(const std::vector<std::pair<uint64_t, double>>& configs,
                                 int rounds, double swing = 0) {
  std::vector<RaceTrial> out;
  for (int r = 0; r < rounds; ++r) {
    for (const auto& [c, value] : configs) {
      const double sign = (static_cast<uint64_t>(r) + c) % 2 == 0 ? 1 : -1;
      out.push_back(ok(c, r, value * (1 + sign * swing)));
    }
  }
  return out;
}

// A noisy quality: q, 0.05 below it in even rounds and above it in odd ones.
double quality(double q, int r) { return q + (r % 2 == 0 ? -0.05 : 0.05); }

size_t count_events(const RaceState& state, RaceEventKind kind, uint64_t c) {
  size_t n = 0;
  for (const auto& e : state.facts().events) n += e.kind == kind && e.config == c;
  return n;
}

}  // namespace

TEST_CASE("race step join: a config joins once, on its first round, saying why", "[tune]") {
  const Space s;
  const RaceOptions options;
  const std::vector<RaceTrial> trials = {ok(0, 0, 100), ok(1, 0, 100), ok(0, 1, 100), ok(1, 1, 100),
                                         ok(2, 1, 100)};
  RaceState state(s.space, trials, options);
  state.join(0);
  state.join(1);
  REQUIRE(state.facts().events.size() == 3);
  CHECK(state.facts().events[0].reason == "screening: the baseline or one knob changed");
  CHECK(state.facts().events[2].config == 2);
  CHECK(state.facts().events[2].round == 1);
  CHECK(state.facts().events[2].reason == "proposed by the model");
}

TEST_CASE("race step write_off_failures: a failure writes a config off, a first timeout retries",
          "[tune]") {
  const Space s;
  const RaceOptions options;
  using O = RaceTrial::Outcome;
  const std::vector<RaceTrial> trials = {ok(0, 0, 100),
                                         failed(1, 0, O::oom, "CUDA out of memory"),
                                         failed(2, 0, O::failed, "no kernel"),
                                         failed(3, 0, O::transient, "timeout"),
                                         ok(0, 1, 100),
                                         failed(3, 1, O::transient, "timeout")};
  RaceState state(s.space, trials, options);
  CHECK(state.write_off_failures(0) == std::vector<uint64_t>{0, 3});
  CHECK(state.facts().written_off == std::set<uint64_t>{1, 2});
  CHECK(state.facts().oom_digits == std::vector<std::vector<size_t>>{s.space.digits(1)});
  CHECK(state.facts().failed_digits == std::vector<std::vector<size_t>>{s.space.digits(2)});
  CHECK(count_events(state, RaceEventKind::infeasible, 1) == 1);
  CHECK(count_events(state, RaceEventKind::retried, 3) == 1);
  // The retry fails too: written off. The configs written off before are
  // not judged again.
  CHECK(state.write_off_failures(1) == std::vector<uint64_t>{0});
  CHECK(state.facts().written_off == std::set<uint64_t>{1, 2, 3});
  CHECK(count_events(state, RaceEventKind::infeasible, 3) == 1);
  CHECK(count_events(state, RaceEventKind::infeasible, 1) == 1);
}

TEST_CASE("race step look_level: Bonferroni over the contenders and the noisy constraints",
          "[tune]") {
  const Space s;
  RaceOptions options;
  options.constraints = {parse_constraint("quality>=0.9"), parse_constraint("batch_size<=32")};
  auto trials = rounds_of({{0, 100}, {1, 100}, {2, 100}}, 3);
  trials.push_back(ok(3, 2, 100));
  RaceState state(s.space, trials, options);
  // Three configs with two ok rounds: two pairs with the leader, and one
  // noisy constraint (a setting needs no test); config 3 has one round.
  const std::vector<uint64_t> racing = {0, 1, 2, 3};
  CHECK(state.look_level(2, racing) == race_level(options.alpha, 2, 3));
  CHECK(state.look_level(0, racing) == race_level(options.alpha, 1, 1));
}

TEST_CASE(
    "race step look_level: on time to target a look spends only where a sign test could "
    "reject",
    "[tune][target]") {
  const Space s;
  RaceOptions options;
  options.time_to_target = true;
  RaceState state(s.space, {}, options);
  // One test: the series' first term is 0.05 * 6 / pi^2 = 0.030, and 2^-n
  // is within it from six rounds on.
  for (int64_t r = 0; r < 5; ++r) CHECK(state.look_level(r, {}) == 1);
  CHECK(state.facts().looks_spent == 0);
  CHECK(state.look_level(5, {}) == race_level(options.alpha, 1, 0));
  CHECK(state.facts().looks_spent == 1);
  // The second term (a quarter of the first) needs eight.
  CHECK(state.look_level(6, {}) == 1);
  CHECK(state.look_level(7, {}) == race_level(options.alpha, 2, 0));
  CHECK(state.facts().looks_spent == 2);
}

TEST_CASE(
    "race step apply_constraints: an estimate beyond a noisy constraint races on but "
    "cannot lead, a setting or a shown breach writes it off",
    "[tune]") {
  const Space s;
  RaceOptions options;
  options.constraints = {parse_constraint("quality>=0.9"), parse_constraint("batch_size<=32")};
  const uint64_t meets = s.config(16, "fp32"), below = s.config(16, "fp16");
  const uint64_t shown = s.config(32, "fp16"), too_big = s.config(64, "fp32");
  std::vector<RaceTrial> trials;
  for (int r = 0; r < 4; ++r) {
    trials.push_back(ok(meets, r, 100, 0.95));
    trials.push_back(ok(too_big, r, 100, 0.95));
    trials.push_back(ok(shown, r, 100, 0.5 + 0.01 * r));
  }
  trials.push_back(ok(below, 3, 100, 0.85));  // one round: no test yet
  RaceState state(s.space, trials, options);
  const auto kept = state.apply_constraints(3, 0.95, {meets, below, shown, too_big});
  CHECK(kept == std::vector<uint64_t>{meets, below});
  CHECK(state.facts().written_off == std::set<uint64_t>{shown, too_big});
  CHECK(state.facts().meeting_at_last_look == std::set<uint64_t>{meets});
  CHECK(state.facts().meeting_when_last_judged == std::set<uint64_t>{meets});
  CHECK(state.facts().breaking_when_last_judged == std::set<uint64_t>{below, shown, too_big});
  CHECK(count_events(state, RaceEventKind::infeasible, shown) == 1);
  CHECK(state.facts().events.back().reason.find("set to 64") != std::string::npos);
}

TEST_CASE("race step choose_leader: the fastest that meets the constraints and ran twice leads",
          "[tune]") {
  const Space s;
  RaceOptions options;
  options.constraints = {parse_constraint("quality>=0.9")};
  std::vector<RaceTrial> trials;
  for (int r = 0; r < 2; ++r) {
    trials.push_back(ok(0, r, 100, quality(0.95, r)));
    trials.push_back(ok(1, r, 120, quality(0.85, r)));  // faster, its quality estimate too low
  }
  trials.push_back(ok(2, 1, 150, 0.95));  // fastest, one round only
  RaceState state(s.space, trials, options);
  const auto racing = state.apply_constraints(1, 0.95, {0, 1, 2});
  state.choose_leader(1, racing);
  CHECK(state.facts().leader == std::optional<uint64_t>(0));
  CHECK(state.facts().fastest_constraints_aside == std::optional<uint64_t>(1));
  CHECK(state.facts().levels.at(2) > state.facts().levels.at(1));
  // No leader, so the decision takes the fastest, and says so.
  RaceOptions strict = options;
  strict.constraints = {parse_constraint("quality>=0.99")};
  RaceState none(s.space, trials, strict);
  none.choose_leader(1, none.apply_constraints(1, 0.95, {0, 1, 2}));
  std::string stop = "the budget ended the race";
  CHECK_FALSE(none.facts().leader);
  CHECK(none.winner(&stop) == std::optional<uint64_t>(1));
  CHECK(stop.find("the winner is the fastest of them") != std::string::npos);
}

TEST_CASE("race step eliminate: a candidate shown slower than the leader is dropped", "[tune]") {
  const Space s;
  const RaceOptions options;
  auto trials = rounds_of({{0, 100}, {1, 80}}, 6, 0.03);
  trials.push_back(ok(2, 5, 99));  // one round: no test against the leader yet
  RaceState state(s.space, trials, options);
  for (int64_t r = 0; r < 6; ++r) state.look(r);
  CHECK(state.facts().leader == std::optional<uint64_t>(0));
  CHECK(state.facts().shown_slower == std::set<uint64_t>{1});
  CHECK(state.facts().still_racing == std::vector<uint64_t>{0, 2});
  REQUIRE(count_events(state, RaceEventKind::dropped, 1) == 1);
  const RaceEvent& drop = *std::find_if(
      state.facts().events.begin(), state.facts().events.end(),
      [](const RaceEvent& e) { return e.config == 1 && e.kind == RaceEventKind::dropped; });
  CHECK(drop.leader == std::optional<uint64_t>(0));
  REQUIRE(drop.evidence);
  CHECK(drop.evidence->high < 1);
  // A dropped config runs no more: the next look does not judge it.
  CHECK(state.write_off_failures(5) == std::vector<uint64_t>{0, 2});
}

TEST_CASE("race step eliminate: candidates within the band of the leader are all equivalent",
          "[tune]") {
  const Space s;
  const RaceOptions options;
  const auto same_trials = rounds_of({{0, 100}, {1, 100.1}}, 6);
  RaceState same(s.space, same_trials, options);
  for (int64_t r = 0; r < 6; ++r) same.look(r);
  CHECK(same.facts().shown_slower.empty());
  CHECK(same.facts().all_equivalent);
  // 4% apart over two rounds 6% apart: neither dropped nor shown within 2%.
  const auto apart_trials = rounds_of({{0, 100}, {1, 96}}, 2, 0.03);
  RaceState apart(s.space, apart_trials, options);
  for (int64_t r = 0; r < 2; ++r) apart.look(r);
  CHECK(apart.facts().shown_slower.empty());
  CHECK_FALSE(apart.facts().all_equivalent);
}

TEST_CASE("race step proposals: as many as max_live leaves room for, none without a leader",
          "[tune]") {
  const Space s;
  RaceOptions options;
  options.proposals_per_round = 2;
  const auto trials = rounds_of({{0, 100}, {1, 103}}, 2, 0.03);
  RaceState state(s.space, trials, options);
  for (int64_t r = 0; r < 2; ++r) state.look(r);
  REQUIRE(state.facts().still_racing.size() == 2);
  const auto proposals = state.proposals();
  CHECK(proposals.size() == 2);
  for (uint64_t c : proposals) CHECK(state.facts().tried.count(c) == 0);
  RaceOptions full = options;
  full.max_live = 3;  // room for one
  RaceState one(s.space, trials, full);
  for (int64_t r = 0; r < 2; ++r) one.look(r);
  CHECK(one.proposals().size() == 1);
  const auto first_trials = rounds_of({{0, 100}, {1, 103}}, 1);
  RaceState first(s.space, first_trials, options);
  first.look(0);  // one round: nobody can lead yet
  CHECK_FALSE(first.facts().leader);
  CHECK(first.proposals().empty());
}

TEST_CASE(
    "race step stopping: equivalent candidates and no proposals end the race, else the "
    "budget does",
    "[tune]") {
  const Space s;
  const RaceOptions options;
  const auto state_trials = rounds_of({{0, 100}, {1, 100.1}}, 6);
  RaceState state(s.space, state_trials, options);
  for (int64_t r = 0; r < 6; ++r) state.look(r);
  CHECK_FALSE(state.races_on({}));
  CHECK(state.races_on({4}));
  CHECK(state.why_ended(false, {}) ==
        "the 2 candidates left are within 2% of each other, and the model proposes none");
  CHECK(state.why_ended(true, {}) == "the budget ended the race with 2 candidates left");
  const auto apart_trials = rounds_of({{0, 100}, {1, 96}}, 2, 0.03);
  RaceState apart(s.space, apart_trials, options);
  for (int64_t r = 0; r < 2; ++r) apart.look(r);
  REQUIRE(apart.facts().still_racing.size() == 2);
  CHECK(apart.races_on({}));
}

TEST_CASE("race step next_round: a dropped baseline runs on as a relative constraint's reference",
          "[tune]") {
  const Space s;
  RaceOptions options;
  options.baseline = 1;
  options.constraints = {parse_constraint("quality>=0.9*baseline")};
  std::vector<RaceTrial> trials;
  for (int r = 0; r < 6; ++r) {
    trials.push_back(ok(0, r, 100, 1.0 + 0.001 * r));
    trials.push_back(ok(1, r, 80, 1.0 - 0.001 * r));
  }
  RaceState state(s.space, trials, options);
  for (int64_t r = 0; r < 6; ++r) state.look(r);
  REQUIRE(state.facts().shown_slower.count(1) == 1);
  CHECK(state.next_round({5}) == std::vector<uint64_t>{0, 5, 1});
  RaceOptions absolute = options;
  absolute.constraints = {parse_constraint("quality>=0.9")};
  RaceState plain(s.space, trials, absolute);
  for (int64_t r = 0; r < 6; ++r) plain.look(r);
  REQUIRE(plain.facts().shown_slower.count(1) == 1);
  CHECK(plain.next_round({5}) == std::vector<uint64_t>{0, 5});
}

TEST_CASE("race step confirmation: the runner-up may lead, the baseline unless written off",
          "[tune]") {
  const Space s;
  RaceOptions options;
  options.baseline = 3;
  options.constraints = {parse_constraint("quality>=0.9")};
  std::vector<RaceTrial> trials;
  for (int r = 0; r < 2; ++r) {
    trials.push_back(ok(0, r, 100, quality(0.95, r)));
    trials.push_back(ok(1, r, 120, quality(0.85, r)));  // faster, but cannot lead
    trials.push_back(ok(2, r, 90, quality(0.95, r)));
  }
  trials.push_back(failed(3, 0, RaceTrial::Outcome::failed, "no kernel"));
  RaceState state(s.space, trials, options);
  for (int64_t r = 0; r < 2; ++r) state.look(r);
  CHECK(state.runner_up(0) == std::optional<uint64_t>(2));
  CHECK(state.confirmation_configs(0, 2) == std::vector<uint64_t>{0, 2});
  RaceOptions ran = options;
  ran.baseline = 4;  // not written off: it is confirmed too
  RaceState with_baseline(s.space, trials, ran);
  for (int64_t r = 0; r < 2; ++r) with_baseline.look(r);
  CHECK(with_baseline.confirmation_configs(0, 2) == std::vector<uint64_t>{0, 2, 4});
}
