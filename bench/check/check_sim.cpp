// `gpusweep check`'s false verdicts and power, simulated: whole checks (K
// configs under a base and a head build, rounds interleaved as SweepRun runs
// them) driven through the product's round_order, check_status and
// check_pairs, under conditions that fool simpler rules (position effects,
// drift, heavy tails, failed trials). Two naive rules run beside it on the
// same simulated trials. The figures are in
// bench/results/2026-11-28-check-simulated.md.
//
//   bench/run.py check_sim [-- OPTIONS]   (build/bench/check_sim --help)
// --promises (or --json, the same as JSON) prints the check's promises cell
// by cell instead, the replaced stopping rule beside the product's.
#include "analysis/check.hpp"
#include "analysis/compare.hpp"
#include "analysis/ratio_model.hpp"
#include "sim_flags.hpp"
#include "spec/sweep.hpp"
#include "wilson.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace gpusweep;
using host::CheckVerdict;
using host::ConfigSamples;
using host::Json;

namespace {

struct Model {
  int pairs = 4;  // configs of the sweep; the check runs each under both builds
  int blocks = 5;
  int repeats = 3;            // measure.repeats: the first rounds, run whole
  int max_rounds = 20;        // rounds in all, at most: measure.budget_s's stand-in
  double process_sd = 0.015;  // log sd of a process's (trial's) speed
  double block_sd = 0.01;     // log sd of a block's
  double tolerance = host::kDefaultCheckTolerance;
  // Which rounds a position effect acts in: all, the first (measure.repeats)
  // or the later ones, to tell where its false alarms come from.
  enum class Rounds { all, first, later } position_rounds = Rounds::all;
  // How rounds stop: `after`, the product's check_status; `before`, the
  // rule it replaced (a pair stopped as soon as check_pairs' verdict at the
  // unspent 98.5% was decided, a quality loss included), for figures side
  // by side.
  enum class Rule { before, after } rule = Rule::after;
  host::QualityGuard quality_guard = host::QualityGuard::not_worse;
  // Quality, when a condition has it: a seed's effect shared by a round's
  // base and head trials of a config, and each trial's own noise (log sd;
  // about dqn's: its paired seeds differ by 8%).
  double quality_seed_sd = 0.10;
  double quality_trial_sd = 0.05;
  // `check --resume` of the finished check this many times, each with
  // max_rounds more rounds.
  int resumes = 0;
};

enum class Position { none, ends, linear };

struct Condition {
  std::string name;
  double slowdown = 0;  // head's true throughput is base's x (1 - slowdown)
  Position position = Position::none;
  double position_size = 0.03;  // log slowdown at the worst place
  bool drift = false;
  bool heavy = false;         // t(3) noise, scaled to the same sd
  double fail = 0;            // a trial's chance of failing outright
  double quality_loss = NAN;  // head's quality lower by this share; NaN: no quality
};

// A 64-bit hash of two words (splitmix64's finaliser over their mix): the
// seed of one trial's or one round's draws, so that the check and naive
// rule (b) see the same noise for the same (round, config).
uint64_t mix(uint64_t a, uint64_t b) {
  random::SplitMix64 r(a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL));
  r();
  return r();
}

// One draw of unit variance: Gaussian, or t(3) / sqrt(3). Both shapes
// consume the same draws, so conditions share their random numbers.
double noise(random::SplitMix64& rng, bool heavy) {
  const double z = random::normal(rng, 0.0, 1.0);
  double chi2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double w = random::normal(rng, 0.0, 1.0);
    chi2 += w * w;
  }
  return heavy ? z / std::sqrt(chi2 / 3) / std::sqrt(3.0) : z;
}

// One simulated check's machine: its seeds, and the drift of log time at
// each block slot of the run (a trend plus a random walk, zero without drift).
struct World {
  uint64_t seed = 0;
  uint64_t order_seed = 0;
  std::vector<double> drift;
};

World make_world(const Model& m, const Condition& c, uint64_t seed) {
  World w;
  w.seed = seed;
  w.order_seed = mix(seed, 1);
  const size_t slots = static_cast<size_t>(m.max_rounds) * 2 * m.pairs * m.blocks;
  w.drift.assign(slots, 0.0);
  // 5% slower over the first rounds (all configs' blocks), and on at that
  // rate; the walk's sd is 2% over the same span.
  const double first = static_cast<double>(m.repeats) * 2 * m.pairs * m.blocks;
  random::SplitMix64 rng(mix(seed, 2));
  double walk = 0;
  for (size_t t = 0; t < slots; ++t) {
    walk += random::normal(rng, 0.0, 0.02 / std::sqrt(first));
    if (c.drift) w.drift[t] = std::log(1 / 0.95) * static_cast<double>(t) / first + walk;
  }
  return w;
}

// Configs 2k (base) and 2k + 1 (head) are pair k.
std::vector<ConfigSamples> fresh_samples(const Model& m) {
  std::vector<ConfigSamples> out(static_cast<size_t>(2 * m.pairs));
  for (int i = 0; i < 2 * m.pairs; ++i) {
    auto& c = out[static_cast<size_t>(i)];
    c.config_index = i;
    c.config = {{host::kBuildKey, i % 2 == 0 ? host::kBaseBuild : host::kHeadBuild},
                {"batch", 32 << (i / 2)}};
    c.unit = "samples";
  }
  return out;
}

// One round: the configs run in round_order's order as one interleave
// group, their first turns in that order and later cycles shuffled (as the
// TurnScheduler grants them), one block measured at a time.
void run_round(const Model& m, const Condition& cond, const World& w, std::vector<uint64_t> configs,
               int64_t round, size_t* slot, std::vector<ConfigSamples>& out) {
  const auto order = host::round_order(std::move(configs), w.order_seed, round);
  const size_t n = order.size();
  struct Live {
    size_t config;
    double offset;
    std::vector<double> block_noise;
    host::RunSamples run;
  };
  std::vector<Live> live;
  for (size_t q = 0; q < n; ++q) {
    const size_t config = static_cast<size_t>(order[q]);
    random::SplitMix64 rng(mix(w.seed, mix(static_cast<uint64_t>(round) + 3, config)));
    const bool failed = random::unit(rng) < cond.fail;
    double offset = m.process_sd * noise(rng, cond.heavy);
    if (config % 2 == 1) offset -= std::log(1 - cond.slowdown);
    const bool placed = m.position_rounds == Model::Rounds::all ||
                        (m.position_rounds == Model::Rounds::first) == (round < m.repeats);
    if (placed && cond.position == Position::ends && (q == 0 || q + 1 == n)) {
      offset += cond.position_size;
    }
    if (placed && cond.position == Position::linear && n > 1) {
      offset += cond.position_size * static_cast<double>(q) / static_cast<double>(n - 1);
    }
    std::vector<double> blocks(static_cast<size_t>(m.blocks));
    for (auto& b : blocks) b = m.block_sd * noise(rng, cond.heavy);
    auto& c = out[config];
    ++c.trials;
    if (failed) {
      c.problem = "failed: a simulated transient failure";
      continue;
    }
    Live l{config, offset, std::move(blocks), {}};
    l.run.repeat = round;
    l.run.group = "r" + std::to_string(round);
    live.push_back(std::move(l));
  }
  random::SplitMix64 shuffle_rng(mix(w.seed, mix(static_cast<uint64_t>(round) + 3, 0xC1C1E)));
  std::vector<size_t> turn(live.size());
  std::iota(turn.begin(), turn.end(), 0);
  for (int b = 0; b < m.blocks; ++b) {
    if (b > 0) random::shuffle(turn, shuffle_rng);
    for (size_t i : turn) {
      Live& l = live[i];
      const double log_time = l.offset + w.drift[*slot] + l.block_noise[static_cast<size_t>(b)];
      *slot = std::min(*slot + 1, w.drift.size() - 1);
      l.run.values.push_back(std::exp(-log_time));
      l.run.cycles.emplace_back(b);
    }
  }
  for (Live& l : live) {
    host::index_run(l.run);
    auto& c = out[l.config];
    ++c.ok;
    if (!std::isnan(cond.quality_loss)) {
      // The seed's effect is drawn from (round, pair): base and head share it.
      random::SplitMix64 seed_rng(
          mix(w.seed, mix(static_cast<uint64_t>(round) + 3, 0x5EED00 + l.config / 2)));
      random::SplitMix64 trial_rng(
          mix(w.seed, mix(static_cast<uint64_t>(round) + 3, 0x9A11700 + l.config)));
      const double level = m.quality_seed_sd * random::normal(seed_rng, 0.0, 1.0) +
                           m.quality_trial_sd * random::normal(trial_rng, 0.0, 1.0);
      const double loss = l.config % 2 == 1 ? cond.quality_loss : 0;
      c.higher_is_better = true;
      c.quality.push_back({100 * (1 - loss) * std::exp(level), NAN, round});
    }
    c.throughput.insert(c.throughput.end(), l.run.values.begin(), l.run.values.end());
    c.runs.push_back(std::move(l.run));
  }
}

std::vector<uint64_t> all_configs(const Model& m) {
  std::vector<uint64_t> v(static_cast<size_t>(2 * m.pairs));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// A pair's outcome under one rule.
enum class Call { none, regression, improvement, no_regression, inconclusive };

struct CheckRun {
  std::vector<Call> check;         // per pair: the product's verdict
  std::vector<bool> covered;       // per pair: its final interval holds the true ratio
  std::vector<bool> quality_loss;  // per pair: the quality guard called it worse
  CheckVerdict verdict = CheckVerdict::inconclusive;  // the check's (its exit status)
  std::vector<int> rounds;                            // per pair: the rounds it ran
  std::vector<bool> one_process;                      // per pair: its ratio paired a single repeat
  std::vector<Call> fixed;   // naive (a): ratio of medians after the first rounds
  std::vector<Call> looked;  // naive (b): 95% interval after every round
  std::vector<int> looked_rounds;
};

Call as_call(CheckVerdict v) {
  switch (v) {
    case CheckVerdict::regression:
      return Call::regression;
    case CheckVerdict::improvement:
      return Call::improvement;
    case CheckVerdict::no_regression:
      return Call::no_regression;
    case CheckVerdict::inconclusive:
      return Call::inconclusive;
  }
  return Call::none;
}

CheckRun simulate_check(const Model& m, const Condition& cond, uint64_t seed) {
  const World w = make_world(m, cond, seed);
  const size_t k = static_cast<size_t>(m.pairs);
  CheckRun out;
  host::CheckOptions options;
  options.tolerance = m.tolerance;
  options.quality_guard = m.quality_guard;

  // The check, as SweepRun's precision_rounds runs it.
  auto samples = fresh_samples(m);
  size_t slot = 0;
  int64_t rounds = 0;
  for (; rounds < m.repeats; ++rounds)
    run_round(m, cond, w, all_configs(m), rounds, &slot, samples);
  // Naive (a): the planned rounds' medians, no interval.
  out.fixed.assign(k, Call::none);
  for (size_t p = 0; p < k; ++p) {
    const auto base = host::config_throughput(samples[2 * p]);
    const auto head = host::config_throughput(samples[2 * p + 1]);
    if (!base || !head) continue;
    const double r = *head / *base;
    out.fixed[p] = r < 1 - m.tolerance   ? Call::regression
                   : r > 1 + m.tolerance ? Call::improvement
                                         : Call::no_regression;
  }
  out.rounds.assign(k, static_cast<int>(m.repeats));
  std::set<int64_t> done;
  int64_t cap = m.max_rounds;
  int resumes_left = m.resumes;
  for (;;) {
    auto status = host::check_status(samples, options, done);
    if (m.rule == Model::Rule::before) {
      // The replaced rule: a pair is done once its verdict is.
      for (const auto& p : host::check_pairs(samples, options)) {
        const bool decided =
            p.base->ok == 0 || p.head->ok == 0 || p.verdict != CheckVerdict::inconclusive;
        for (auto& c : status.configs) {
          if (c.config_index == p.base->config_index || c.config_index == p.head->config_index) {
            c.separated = decided;
            c.precise = false;
          }
        }
      }
      status.done = true;
      for (const auto& c : status.configs) status.done = status.done && c.done();
    }
    for (const auto& c : status.configs) {
      if (c.done()) done.insert(c.config_index);
    }
    if (status.done || rounds >= cap) {
      // A resume of the finished check: its first finish's rounds are
      // judged, and the rounds go on from an empty done set, as
      // SweepRun's do.
      if (resumes_left == 0 || status.done) break;
      --resumes_left;
      if (!options.judged_rounds) options.judged_rounds = rounds;
      cap += m.max_rounds;
      done.clear();
      continue;
    }
    std::vector<uint64_t> open;
    for (const auto& c : status.configs) {
      if (!c.done()) open.push_back(static_cast<uint64_t>(c.config_index));
    }
    for (uint64_t c : open) {
      if (c % 2 == 0) ++out.rounds[c / 2];
    }
    run_round(m, cond, w, open, rounds, &slot, samples);
    ++rounds;
  }
  out.check.assign(k, Call::none);
  out.one_process.assign(k, false);
  out.covered.assign(k, false);
  out.quality_loss.assign(k, false);
  const auto pairs = host::check_pairs(samples, options);
  out.verdict = host::overall(pairs);
  const double truth = 1 - cond.slowdown;
  for (const auto& p : pairs) {
    const size_t i = static_cast<size_t>(p.base->config_index / 2);
    out.check[i] = as_call(p.verdict);
    out.covered[i] = p.ratio && p.ratio->low <= truth && truth <= p.ratio->high;
    out.quality_loss[i] = p.quality_loss;
    out.one_process[i] = p.ratio && p.ratio->design == host::RatioDesign::one_process;
  }

  // Naive (b): its own rounds over the same world (the same noise for the
  // same round and config), each pair stopped when its 95% interval first
  // excludes 1; a pair still open at the budget passes.
  auto naive = fresh_samples(m);
  slot = 0;
  for (rounds = 0; rounds < m.repeats; ++rounds) {
    run_round(m, cond, w, all_configs(m), rounds, &slot, naive);
  }
  out.looked.assign(k, Call::none);
  out.looked_rounds.assign(k, static_cast<int>(m.repeats));
  for (;;) {
    std::vector<uint64_t> open;
    for (size_t p = 0; p < k; ++p) {
      if (out.looked[p] != Call::none) continue;
      const auto& base = naive[2 * p];
      const auto& head = naive[2 * p + 1];
      if (base.ok == 0 || head.ok == 0) {
        out.looked[p] = Call::inconclusive;
        continue;
      }
      const auto e = host::estimate_ratio(base.runs, head.runs, 0.95);
      if (e && e->high < 1) {
        out.looked[p] = Call::regression;
      } else if (e && e->low > 1) {
        out.looked[p] = Call::improvement;
      } else {
        open.push_back(2 * p);
        open.push_back(2 * p + 1);
      }
    }
    if (open.empty() || rounds >= m.max_rounds) break;
    for (uint64_t c : open) {
      if (c % 2 == 0) ++out.looked_rounds[c / 2];
    }
    run_round(m, cond, w, open, rounds, &slot, naive);
    ++rounds;
  }
  for (auto& c : out.looked) {
    if (c == Call::none) c = Call::no_regression;
  }
  return out;
}

using gpusweep::test::wilson;

// "4.1% [3.3, 5.1]".
std::string share(long k, long n) {
  if (n == 0) return "-";
  const gpusweep::test::Wilson w = wilson(k, n);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%% [%.1f, %.1f]", 100 * w.share, 100 * w.low, 100 * w.high);
  return buf;
}

std::string share_json(long k, long n) {
  const gpusweep::test::Wilson w = wilson(k, n);
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "{\"k\": %ld, \"n\": %ld, \"share\": %.5f, \"low\": %.5f, \"high\": %.5f}", k, n,
                w.share, w.low, w.high);
  return buf;
}

std::string number(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

struct Tally {
  long checks = 0, pairs = 0;
  // Per check: an alarm (A/A: any regression or improvement; an effect: any
  // regression), any pair inconclusive, rounds in all.
  long check_alarm = 0, check_open = 0, fixed_alarm = 0, looked_alarm = 0;
  double check_rounds = 0, looked_rounds = 0;
  // Per pair.
  long regression = 0, improvement = 0, no_regression = 0, inconclusive = 0;
  long pair_fixed = 0, pair_looked = 0;
  // The check's alarms made at the first look, and on one paired repeat
  // (its ratio's interval then holds the blocks of one process per build).
  long alarm_first_look = 0, alarm_one_process = 0;
  double pair_rounds = 0;
};

Tally tally(const Model& m, const Condition& cond, int checks, uint64_t seed) {
  Tally t;
  const bool aa = cond.slowdown == 0;
  auto alarm = [aa](Call c) { return c == Call::regression || (aa && c == Call::improvement); };
  for (int i = 0; i < checks; ++i) {
    const CheckRun r = simulate_check(m, cond, mix(seed, static_cast<uint64_t>(i) + 17));
    ++t.checks;
    bool any = false, open = false, fixed = false, looked = false;
    int rounds = 0, lrounds = 0;
    for (size_t p = 0; p < r.check.size(); ++p) {
      ++t.pairs;
      any = any || alarm(r.check[p]);
      open = open || r.check[p] == Call::inconclusive;
      fixed = fixed || alarm(r.fixed[p]);
      looked = looked || alarm(r.looked[p]);
      rounds = std::max(rounds, r.rounds[p]);
      lrounds = std::max(lrounds, r.looked_rounds[p]);
      t.regression += r.check[p] == Call::regression;
      t.improvement += r.check[p] == Call::improvement;
      t.no_regression += r.check[p] == Call::no_regression;
      t.inconclusive += r.check[p] == Call::inconclusive;
      t.pair_fixed += alarm(r.fixed[p]);
      t.pair_looked += alarm(r.looked[p]);
      t.pair_rounds += r.rounds[p];
      if (alarm(r.check[p])) {
        t.alarm_first_look += r.rounds[p] == m.repeats;
        t.alarm_one_process += r.one_process[p];
      }
    }
    t.check_alarm += any;
    t.check_open += open;
    t.fixed_alarm += fixed;
    t.looked_alarm += looked;
    t.check_rounds += rounds;
    t.looked_rounds += lrounds;
  }
  return t;
}

std::vector<Condition> conditions() {
  std::vector<Condition> v;
  auto add = [&v](std::string name, double slowdown) -> Condition& {
    v.push_back({});
    v.back().name = std::move(name);
    v.back().slowdown = slowdown;
    return v.back();
  };
  add("A/A, Gaussian", 0);
  add("A/A, first and last of a round 3% slower", 0).position = Position::ends;
  add("A/A, 3% slower from first to last place", 0).position = Position::linear;
  add("A/A, drift 5% a 3 rounds + walk", 0).drift = true;
  add("A/A, t(3) blocks and processes", 0).heavy = true;
  add("A/A, 5% of trials fail", 0).fail = 0.05;
  {
    Condition& c = add("A/A, all four at once (ends)", 0);
    c.position = Position::ends;
    c.drift = c.heavy = true;
    c.fail = 0.05;
  }
  add("1% slower (within tolerance), Gaussian", 0.01);
  add("3% slower, Gaussian", 0.03);
  add("3% slower, ends 3%", 0.03).position = Position::ends;
  add("5% slower, Gaussian", 0.05);
  add("5% slower, ends 3%", 0.05).position = Position::ends;
  {
    Condition& c = add("5% slower, all four at once", 0.05);
    c.position = Position::ends;
    c.drift = c.heavy = true;
    c.fail = 0.05;
  }
  return v;
}

// The check's promises, cell by cell: per config, the share of each verdict
// and of final intervals holding the true ratio, at true ratios 1.00, 1 - t
// and 0.95 and look caps 20 and 100, under the replaced rule and the
// product's; then the quality guard's error under A/A throughput (no loss,
// and a loss of exactly the margin) and its pass rate for a head 10% worse.
void promises(Model m, int checks, uint64_t seed, bool json) {
  struct Cell {
    std::string rule, what;
    int cap;
    double ratio;
    long pairs = 0, checks = 0, no_regression = 0, regression = 0, improvement = 0,
         inconclusive = 0, covered = 0, passed = 0, failed = 0, guard = 0;
    double rounds = 0;
  };
  std::vector<Cell> cells;
  auto run = [&](Model mm, Condition c, Cell cell) {
    for (int i = 0; i < checks; ++i) {
      const CheckRun r = simulate_check(mm, c, mix(seed, static_cast<uint64_t>(i) + 17));
      ++cell.checks;
      bool guard = false;
      for (size_t p = 0; p < r.check.size(); ++p) {
        ++cell.pairs;
        cell.no_regression += r.check[p] == Call::no_regression;
        cell.regression += r.check[p] == Call::regression;
        cell.improvement += r.check[p] == Call::improvement;
        cell.inconclusive += r.check[p] == Call::inconclusive;
        cell.covered += r.covered[p];
        cell.rounds += r.rounds[p];
        guard = guard || r.quality_loss[p];
      }
      cell.passed +=
          r.verdict == CheckVerdict::no_regression || r.verdict == CheckVerdict::improvement;
      cell.failed += r.verdict == CheckVerdict::regression;
      cell.guard += guard;
    }
    cells.push_back(cell);
  };
  for (const auto rule : {Model::Rule::before, Model::Rule::after}) {
    Model mm = m;
    mm.rule = rule;
    const std::string name = rule == Model::Rule::before ? "before" : "after";
    for (int cap : {20, 100}) {
      mm.max_rounds = cap;
      for (double ratio : {1.0, 1 - m.tolerance, 0.95}) {
        Condition c;
        c.slowdown = 1 - ratio;
        run(mm, c, Cell{name, "throughput", cap, ratio});
      }
    }
    // A check resumed once after it finished at 20 rounds, 20 more.
    mm.max_rounds = 20;
    mm.resumes = 1;
    for (double ratio : {1.0, 1 - m.tolerance, 0.95}) {
      Condition c;
      c.slowdown = 1 - ratio;
      run(mm, c, Cell{name, "throughput, resumed once", 40, ratio});
    }
    mm.resumes = 0;
    mm.max_rounds = 20;
    for (const auto guard : {host::QualityGuard::not_worse, host::QualityGuard::non_inferiority}) {
      mm.quality_guard = guard;
      const std::string g = host::to_string(guard);
      for (double loss : {0.0, 0.01, 0.10}) {
        Condition c;
        c.quality_loss = loss;
        run(mm, c,
            Cell{name, "quality " + g + ", head " + number(100 * loss, 0) + "% worse", 20, 1.0});
      }
    }
  }
  if (json) {
    std::cout << "{\"checks_a_cell\": " << checks << ", \"configs\": " << m.pairs
              << ", \"tolerance\": " << m.tolerance << ", \"process_sd\": " << m.process_sd
              << ", \"block_sd\": " << m.block_sd << ", \"seed\": " << seed << ", \"cells\": [\n";
    for (size_t i = 0; i < cells.size(); ++i) {
      const Cell& c = cells[i];
      std::cout << "  {\"rule\": \"" << c.rule << "\", \"what\": \"" << c.what
                << "\", \"look_cap\": " << c.cap << ", \"ratio\": " << number(c.ratio, 3)
                << ", \"no_regression\": " << share_json(c.no_regression, c.pairs)
                << ", \"regression\": " << share_json(c.regression, c.pairs)
                << ", \"improvement\": " << share_json(c.improvement, c.pairs)
                << ", \"inconclusive\": " << share_json(c.inconclusive, c.pairs)
                << ", \"coverage\": " << share_json(c.covered, c.pairs)
                << ", \"check_exit_0\": " << share_json(c.passed, c.checks)
                << ", \"check_regression\": " << share_json(c.failed, c.checks)
                << ", \"check_failed_by_quality\": " << share_json(c.guard, c.checks)
                << ", \"mean_rounds\": " << number(c.rounds / std::max(1L, c.pairs), 2) << "}"
                << (i + 1 < cells.size() ? "," : "") << "\n";
    }
    std::cout << "]}\n";
    return;
  }
  std::cout << "check_sim --promises: " << checks << " checks a cell, " << m.pairs
            << " config(s) a check, process sd " << 100 * m.process_sd << "%, block sd "
            << 100 * m.block_sd << "%, tolerance " << 100 * m.tolerance << "%, seed " << seed
            << "\n\n| rule | what | look cap | true ratio | no regression | regression | "
               "inconclusive | final interval covers | exit 0 | failed by quality | mean rounds |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Cell& c : cells) {
    std::cout << "| " << c.rule << " | " << c.what << " | " << c.cap << " | " << number(c.ratio, 3)
              << " | " << share(c.no_regression, c.pairs) << " | " << share(c.regression, c.pairs)
              << " | " << share(c.inconclusive, c.pairs) << " | " << share(c.covered, c.pairs)
              << " | " << share(c.passed, c.checks) << " | " << share(c.guard, c.checks) << " | "
              << number(c.rounds / std::max(1L, c.pairs), 1) << " |\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  Model m;
  int checks = 2000;
  uint64_t seed = 2026;
  std::string only, position_rounds = "all";
  bool promise = false, json = false;
  gpusweep::bench::SimFlags flags(
      "check_sim", "gpusweep check's false verdicts and power, simulated, beside two naive rules.");
  flags.option("--checks", &checks, "checks a condition")
      .at_least(1)
      .option("--rounds", &m.max_rounds, "most rounds a check runs")
      .at_least(m.repeats)
      .option("--seed", &seed, "random seed")
      .option("--configs", &m.pairs, "configs a check, each run in both builds")
      .at_least(1)
      .option("--blocks", &m.blocks, "blocks a trial")
      .at_least(2)
      .option("--process-sd", &m.process_sd, "sd of a process's mean, as a fraction")
      .option("--block-sd", &m.block_sd, "sd of a block about its process's mean, as a fraction")
      .option("--tolerance", &m.tolerance, "the check's tolerance, as a fraction")
      .option("--position-rounds", &position_rounds, "the rounds a position effect acts in",
              {"all", "first", "later"})
      .option("--only", &only, "only the conditions whose name holds this text")
      .flag("--promises", &promise,
            "the promises cell by cell instead, the replaced stopping rule beside")
      .flag("--json", &json, "the promises as JSON");
  flags.parse(argc, argv);
  m.position_rounds = position_rounds == "first"   ? Model::Rounds::first
                      : position_rounds == "later" ? Model::Rounds::later
                                                   : Model::Rounds::all;
  if (promise || json) {
    promises(m, checks, seed, json);
    return 0;
  }

  std::cout << "check_sim: " << checks << " checks a condition, " << m.pairs
            << " configs x 2 builds, " << m.repeats << " rounds then up to " << m.max_rounds
            << " in all, " << m.blocks << " blocks a trial, process sd " << 100 * m.process_sd
            << "%, block sd " << 100 * m.block_sd << "%, tolerance " << 100 * m.tolerance
            << "%, seed " << seed << "\n\n"
            << "Per check. Alarm: A/A, any pair called regression or improvement (false alarm); "
               "a slower head, any pair called regression (power). (a): head/base ratio of "
               "medians after the first rounds beyond the tolerance; (b): 95% interval looked at "
               "after every round, a pair stopped at its first exclusion of 1.\n\n"
            << "| condition | check: alarm | check: any inconclusive | check: mean rounds | (a) "
               "fixed threshold: alarm | (b) 95% every round: alarm | (b): mean rounds |\n"
            << "|---|---|---|---|---|---|---|\n"
            << std::flush;
  std::vector<std::pair<std::string, Tally>> results;
  for (const Condition& c : conditions()) {
    if (!only.empty() && c.name.find(only) == std::string::npos) continue;
    const Tally t = tally(m, c, checks, seed);
    results.emplace_back(c.name, t);
    std::cout << "| " << c.name << " | " << share(t.check_alarm, t.checks) << " | "
              << share(t.check_open, t.checks) << " | " << number(t.check_rounds / t.checks, 1)
              << " | " << share(t.fixed_alarm, t.checks) << " | " << share(t.looked_alarm, t.checks)
              << " | " << number(t.looked_rounds / t.checks, 1) << " |\n"
              << std::flush;
  }
  std::cout << "\nPer pair (" << m.pairs
            << " a check). Alarm as above, for one pair; the check's four verdicts; of the "
               "check's alarms, those made at the first look and those on one paired repeat.\n\n"
            << "| condition | regression | improvement | no regression | inconclusive | mean "
               "rounds | alarms: first look, one repeat | (a): alarm | (b): alarm |\n"
            << "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [name, t] : results) {
    std::cout << "| " << name << " | " << share(t.regression, t.pairs) << " | "
              << share(t.improvement, t.pairs) << " | " << share(t.no_regression, t.pairs) << " | "
              << share(t.inconclusive, t.pairs) << " | " << number(t.pair_rounds / t.pairs, 1)
              << " | " << t.alarm_first_look << ", " << t.alarm_one_process << " | "
              << share(t.pair_fixed, t.pairs) << " | " << share(t.pair_looked, t.pairs) << " |\n";
  }
}
