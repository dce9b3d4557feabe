// tune's race on time to target (RaceOptions::time_to_target), simulated on
// a space with known median times: batch size and gradient accumulation,
// where the most samples per second is not the fastest to the target. Each
// round every config trains from the round's seed (a pace common to the
// round: a lucky seed is fast for everyone), with its own heavy-tailed noise
// (t with 3 degrees of freedom), a position effect (each trial of a round 2%
// slower than the one before it: 14% from first to last of 8), transient failures (timeouts), a
// budget (max_s) and adaptive capping at 1.5x the round's best time, as the runner does: a trial
// past the cap is censored there. The race must not drop the true best by a test more often than
// alpha, must pick it (or one within 10% of it) in most races, and its confirmation must cover the
// truth.
#include "analysis/race.hpp"
#include "analysis/tune_trials.hpp"
#include "spec/tune.hpp"

#include "temp_dir.hpp"
#include "wilson.hpp"

#include <catch2/catch.hpp>

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

using namespace gpusweep;
using namespace gpusweep::host;
using gpusweep::test::rate;

namespace {

PluginManifest time_manifest() {
  return PluginManifest::parse(nlohmann::json::parse(R"({
    "name": "sim", "version": "1.0.0", "unit": "samples",
    "params": [
      {"name": "batch_size", "type": "int", "default": 16, "min": 1, "max": 4096},
      {"name": "grad_accum", "type": "int", "default": 1, "min": 1, "max": 64}
    ]})"));
}

SweepSpec time_space_spec() {
  return parse_sweep(R"({"name": "sim", "workload": "sim",
    "grid": {"batch_size": [16, 32, 64, 128, 256, 512], "grad_accum": [1, 2, 4]}})",
                     "sim.json");
}

struct TimeWorld {
  const TuneSpace& space;
  bool flat = false;
  double noise_sd = 0.15;       // the config's own noise, log scale
  double pace_sd = 0.2;         // the round's seed, common to its configs
  double position_step = 0.02;  // each trial of a round this much slower (log)
  double transient_rate = 0.02;
  double slack = 1.5;  // adaptive capping
  double max_s = 60;   // the budget
  random::SplitMix64 rng;

  TimeWorld(const TuneSpace& s, uint64_t seed) : space(s), rng(seed) {}

  // Median time to target, seconds: batch 32 without accumulation is the
  // fastest; 16 has fewer samples per second, larger batches need more
  // samples to the target, and accumulation more still.
  double truth(uint64_t c) const {
    if (flat) return 10;
    const auto d = space.digits(c);
    const double batch[] = {1.3, 1.0, 1.15, 1.5, 2.2, 3.5};
    const double accum[] = {1.0, 1.4, 2.2};
    return 10 * batch[d[0]] * accum[d[1]];
  }
  double best() const {
    double b = 1e300;
    for (uint64_t c = 0; c < space.size(); ++c) b = std::min(b, truth(c));
    return b;
  }
  double t3() {  // t(3) scaled to sd 1
    double chi2 = 0;
    for (int i = 0; i < 3; ++i) chi2 += std::pow(random::normal(rng, 0, 1), 2);
    return random::normal(rng, 0, 1) / std::sqrt(chi2 / 3) / std::sqrt(3.0);
  }

  // A round of trials, in its order: each trains to the target; capped at
  // slack x the round's best reached time, censored at max_s. With a leader
  // (as tune names it to the runner: run/runner.hpp Capping), the leader is
  // never capped and the others not below its time when it reached.
  std::vector<RaceTrial> round(const std::vector<uint64_t>& configs, int64_t r,
                               std::optional<uint64_t> leader = std::nullopt) {
    const double pace = pace_sd * random::normal(rng, 0, 1);
    std::vector<RaceTrial> out;
    std::vector<double> times;
    double best = max_s;
    for (size_t i = 0; i < configs.size(); ++i) {
      RaceTrial t;
      t.config = configs[i];
      t.round = r;
      if (random::unit(rng) < transient_rate) {
        t.outcome = RaceTrial::Outcome::transient;
        t.reason = "timeout: no heartbeat for 30 s";
      }
      const double time = truth(configs[i]) *
                          std::exp(pace + noise_sd * t3() + position_step * static_cast<double>(i));
      if (t.outcome == RaceTrial::Outcome::ok) best = std::min(best, time);
      times.push_back(time);
      out.push_back(std::move(t));
    }
    double cap = std::min(max_s, slack * best);
    std::optional<size_t> lead;
    for (size_t i = 0; i < out.size() && leader; ++i) {
      if (configs[i] == *leader && out[i].outcome == RaceTrial::Outcome::ok) lead = i;
    }
    if (lead && times[*lead] <= max_s) cap = std::min(max_s, std::max(cap, times[*lead]));
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i].outcome != RaceTrial::Outcome::ok) continue;
      const double own_cap = lead && i == *lead ? max_s : cap;
      out[i].censored = times[i] > own_cap;
      out[i].values = {1 / std::min(times[i], own_cap)};
    }
    return out;
  }
};

struct TimeSim {
  SweepSpec spec = time_space_spec();
  PluginManifest m = time_manifest();
  TuneSpace space{spec, m};
  RaceOptions options = [this] {
    RaceOptions o;
    o.baseline = *space.index_of(space.config(0));
    o.time_to_target = true;
    o.confirm_repeats = kTimeConfirmRounds;
    return o;
  }();
};

struct TimeRace {
  RaceStatus status;
  std::vector<RaceTrial> trials;
  int racing_trials = 0;
};

// leader_rule: the round's leader is never capped (TuneRun::note_leader).
TimeRace run_time_race(TimeWorld& world, const RaceOptions& options, int max_trials,
                       bool leader_rule = true) {
  TimeRace out;
  for (int guard = 0; guard < 200; ++guard) {
    out.status = race(world.space, out.trials, options, out.racing_trials >= max_trials);
    if (out.status.phase == RacePhase::done) break;
    const auto configs = round_order(out.status.next, options.seed, out.status.next_round);
    const bool racing = out.status.phase == RacePhase::racing;
    for (auto& t : world.round(configs, out.status.next_round,
                               leader_rule && racing ? out.status.leader : std::nullopt)) {
      out.racing_trials += t.round < kConfirmRound;
      out.trials.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

// The promise, simulated: the best dropped by a test in at most alpha of
// races, under capping, heavy tails, a position effect and timeouts; the
// pick near the best; slow configs dropped; the confirmation's interval
// covering the true speed over the baseline.
TEST_CASE("a race on time to target keeps the best, under capping and the machine's effects",
          "[tune][target][sim]") {
  const TimeSim sim;
  constexpr int kRaces = 300;
  int best_dropped = 0, near = 0, slow_dropped = 0, slow_raced = 0, covered = 0, confirmed = 0;
  int censored = 0, ok = 0, first_drop = 1 << 30;
  const uint64_t slowest = *sim.space.index_of({{"batch_size", 512}, {"grad_accum", 1}});
  for (int seed = 0; seed < kRaces; ++seed) {
    TimeWorld world(sim.space, 77000 + static_cast<uint64_t>(seed));
    const TimeRace out = run_time_race(world, sim.options, /*max_trials=*/120);
    REQUIRE(out.status.winner);
    const double best = world.best();
    for (const auto& t : out.trials) {
      ok += t.outcome == RaceTrial::Outcome::ok;
      censored += t.censored;
    }
    bool raced_slowest = false;
    for (const auto& e : out.status.events) {
      if (e.kind == RaceEventKind::dropped) {
        first_drop = std::min<int>(first_drop, static_cast<int>(e.round));
        best_dropped += world.truth(e.config) <= best;
        slow_dropped += e.config == slowest;
      }
      raced_slowest = raced_slowest || e.config == slowest;
    }
    slow_raced += raced_slowest;
    near += world.truth(*out.status.winner) <= 1.1 * best;
    const uint64_t w = *out.status.winner;
    if (w != sim.options.baseline && out.status.vs_baseline) {
      ++confirmed;
      const double truth = world.truth(sim.options.baseline) / world.truth(w);
      covered += out.status.vs_baseline->low <= truth && truth <= out.status.vs_baseline->high;
      CHECK(out.status.confirm_rounds >= kTimeConfirmRounds);
    }
  }
  INFO("best dropped by a test: " << rate(best_dropped, kRaces)
                                  << "; winner within 10% of the best: " << rate(near, kRaces)
                                  << "; batch 512 (3.5x slower) dropped: "
                                  << rate(slow_dropped, slow_raced)
                                  << "; confirmation covers: " << rate(covered, confirmed)
                                  << "; censored trials: " << rate(censored, ok)
                                  << "; first drop after round " << first_drop);
  // Exact binomial bound: at alpha 5% over 300 races, 23 or more has
  // probability under 1% (and the series spends less than alpha).
  CHECK(best_dropped <= 22);
  CHECK(near >= kRaces * 8 / 10);
  CHECK(slow_dropped >= slow_raced * 8 / 10);
  // 2^-n within 0.05 * 6 / pi^2 = 0.0304 needs six rounds (0-based 5).
  CHECK(first_drop >= 5);
  CHECK(covered >= confirmed * 9 / 10);
  CHECK(censored >= ok / 10);  // the capping did cap: the test saw censoring
}

// The A/A form: every config the same, so each is a true best; the
// baseline, which races in every race, is dropped in at most alpha of them.
TEST_CASE("with every config as fast to the target, the baseline is dropped at most alpha",
          "[tune][target][sim]") {
  const TimeSim sim;
  constexpr int kRaces = 300;
  int dropped = 0, any = 0;
  for (int seed = 0; seed < kRaces; ++seed) {
    TimeWorld world(sim.space, 91000 + static_cast<uint64_t>(seed));
    world.flat = true;
    const TimeRace out = run_time_race(world, sim.options, /*max_trials=*/160);
    bool some = false;
    for (const auto& e : out.status.events) {
      if (e.kind != RaceEventKind::dropped) continue;
      dropped += e.config == sim.options.baseline;
      some = true;
    }
    any += some;
  }
  INFO("baseline dropped: " << rate(dropped, kRaces)
                            << "; any config dropped: " << rate(any, kRaces));
  CHECK(dropped <= 22);
}

// Why the leader is never capped: a round where it was capped (another
// config was that round's fastest) cannot say that a slower config is slower
// than it, and the sign test counts it against the drop. With the rule, the
// config 3.5x slower is dropped in more races, and sooner.
TEST_CASE("a race whose leader is never capped drops the slow configs sooner",
          "[tune][target][sim]") {
  const TimeSim sim;
  constexpr int kRaces = 100;
  const uint64_t slowest = *sim.space.index_of({{"batch_size", 512}, {"grad_accum", 1}});
  auto drops = [&](bool leader_rule, int* rounds) {
    int dropped = 0;
    *rounds = 0;
    for (int seed = 0; seed < kRaces; ++seed) {
      TimeWorld world(sim.space, 55000 + static_cast<uint64_t>(seed));
      const TimeRace out = run_time_race(world, sim.options, /*max_trials=*/120, leader_rule);
      for (const auto& e : out.status.events) {
        if (e.kind == RaceEventKind::dropped && e.config == slowest) {
          ++dropped;
          *rounds += static_cast<int>(e.round) + 1;
        }
      }
    }
    return dropped;
  };
  int rounds_with = 0, rounds_without = 0;
  const int with = drops(true, &rounds_with), without = drops(false, &rounds_without);
  INFO("batch 512 dropped with the leader uncapped: "
       << rate(with, kRaces) << " after " << (with > 0 ? rounds_with / with : 0)
       << " rounds on average; capped like the rest: " << rate(without, kRaces) << " after "
       << (without > 0 ? rounds_without / without : 0));
  CHECK(with >= without);
  CHECK(with >= 90);
}

namespace {

// A stored run of `rounds` rounds of `configs` noop configs, none run yet,
// in round order: race_trials' input.
int64_t race_run(db::Store& store, int64_t rounds, int64_t configs) {
  db::SweepRecord s;
  s.name = "race";
  s.workload = "noop";
  s.spec_json = "{}";
  s.spec_hash = "h";
  std::vector<db::TrialPlan> plans;
  for (int64_t round = 0; round < rounds; ++round) {
    for (int64_t config = 0; config < configs; ++config) {
      db::TrialPlan p;
      p.ordinal = round * configs + config;
      p.config_index = config;
      p.repeat = round;
      p.workload = "noop";
      p.plugin_version = "1";
      p.config_json = "{}";
      p.config_hash = std::to_string(config);
      plans.push_back(p);
    }
  }
  return store.create_sweep(s, plans);
}

}  // namespace

TEST_CASE("race_trials: a diverged trial is censored at the longest time of its round or before",
          "[host][tune][target]") {
  test::TempDir dir("race_trials");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = race_run(store, 2, 2);
  // Round 0: config 0 reached in 4 s, config 1 diverged after 1 s. Round 1:
  // config 0 reached in 2 s, config 1 diverged after 3 s.
  const double time_s[2][2] = {{4, 1}, {2, 3}};
  for (const auto& t : store.trials(id)) {
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    db::Summary m;
    m.unit = "steps";
    o.summary = m;
    const bool diverged = t.plan.config_index == 1;
    o.metrics = {{"stat", 0, "target_time_s", time_s[t.plan.repeat][t.plan.config_index]},
                 {"stat", 0, "target_censored", diverged ? 1.0 : 0.0},
                 {"stat", 0, "target_diverged", diverged ? 1.0 : 0.0}};
    store.commit_trial(t.id, o);
  }
  TuneSpec tune;
  tune.objective = Objective::time_to_target;
  std::map<std::pair<int64_t, uint64_t>, RaceTrial> by;
  for (auto& r : race_trials(store, id, tune)) by[{r.round, r.config}] = r;
  REQUIRE(by.size() == 4);
  CHECK(by[{0, 0}].values == std::vector<double>{1 / 4.0});
  CHECK_FALSE(by[{0, 0}].censored);
  // Diverged: censored at the longest time of its round or an earlier one.
  CHECK(by[{0, 1}].values == std::vector<double>{1 / 4.0});
  CHECK(by[{0, 1}].censored);
  CHECK(by[{1, 1}].values == std::vector<double>{1 / 4.0});
  CHECK(by[{1, 1}].censored);
}

TEST_CASE("race_trials: a target trial killed by timeout_s after evaluating is censored evidence",
          "[host][tune][target]") {
  // As compare reads it: censored at its last
  // evaluation's training clock, not a transient failure to retry or write
  // off outside the race's alpha. One killed before any evaluation stays
  // transient.
  test::TempDir dir("race_timeout");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = race_run(store, 1, 3);
  for (const auto& t : store.trials(id)) {
    db::TrialOutcome o;
    if (t.plan.config_index == 0) {
      o.status = db::TrialStatus::ok;
      o.summary = db::Summary{};
      o.summary->unit = "steps";
      o.metrics = {{"stat", 0, "target_time_s", 2.0}, {"stat", 0, "target_censored", 0.0}};
    } else {
      o.status = db::TrialStatus::timeout;
      o.error = "timed out";
      if (t.plan.config_index == 1) {
        o.metrics = {{"eval", 10, "gpusweep.train_s", 3.0}, {"eval", 20, "gpusweep.train_s", 6.0}};
      }
    }
    store.commit_trial(t.id, o);
  }
  TuneSpec tune;
  tune.objective = Objective::time_to_target;
  std::map<uint64_t, RaceTrial> by;
  for (auto& r : race_trials(store, id, tune)) by[r.config] = r;
  REQUIRE(by.size() == 3);
  CHECK(by[0].outcome == RaceTrial::Outcome::ok);
  CHECK(by[1].outcome == RaceTrial::Outcome::ok);
  CHECK(by[1].values == std::vector<double>{1 / 6.0});
  CHECK(by[1].censored);
  CHECK(by[2].outcome == RaceTrial::Outcome::transient);
}

TEST_CASE("race_trials: a target met at time 0 is the fastest trial, not a failure",
          "[host][tune][target]") {
  // A workload whose first evaluation (before any
  // training) already meets the target reports time 0.
  test::TempDir dir("race_instant");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = race_run(store, 1, 2);
  for (const auto& t : store.trials(id)) {
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    o.summary = db::Summary{};
    o.summary->unit = "steps";
    o.metrics = {{"stat", 0, "target_time_s", t.plan.config_index == 0 ? 0.0 : 2.0},
                 {"stat", 0, "target_censored", 0.0}};
    store.commit_trial(t.id, o);
  }
  TuneSpec tune;
  tune.objective = Objective::time_to_target;
  std::map<uint64_t, RaceTrial> by;
  for (auto& r : race_trials(store, id, tune)) by[r.config] = r;
  REQUIRE(by.size() == 2);
  CHECK(by[0].outcome == RaceTrial::Outcome::ok);
  REQUIRE(by[0].values.size() == 1);
  CHECK(std::isfinite(by[0].values[0]));
  CHECK(by[0].values[0] > by[1].values[0]);
  CHECK_FALSE(by[0].censored);
}
