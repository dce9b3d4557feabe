// A/A runs under a position effect tied to the start order, simulated
// through gpusweep's own round orders (round_order), ratio model
// (estimate_ratio) and precision rule (precision_status): how often an A/A
// pair is called different. Shared by analysis/position_test.cpp (small, fast)
// and bench/position (on demand, 400+ runs a cell).
#pragma once

#include "analysis/compare.hpp"
#include "analysis/precision.hpp"
#include "analysis/ratio_model.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::test {

// What a trial's speed depends on: its start position p in the run (0, 1,
// ... in the order trials start) or its place q in its window's starts.
enum class Effect {
  none,
  alternating,  // p odd: slower by size
  ends,         // the first and the last start of a window: faster by size
  first,        // the first start of a window: faster by size
  drift,        // slower by size * p / (the first batch's trials)
};

inline const char* effect_name(Effect e) {
  switch (e) {
    case Effect::none:
      return "none";
    case Effect::alternating:
      return "alternating";
    case Effect::ends:
      return "ends vs middle";
    case Effect::first:
      return "first slot";
    case Effect::drift:
      return "drift";
  }
  return "?";
}

// Which trials are alive at once: the first batch's repeats all in one
// window (interleaved, as "auto" does when vary_seed makes every trial's
// config distinct), or one window per round (one repeat of every config;
// the rounds precision adds always are).
enum class Windows { shared, separate };

// How the runner orders a window's first turns (loading, setup, warmup):
// shuffled like any cycle (before this fix: one draw for the whole window),
// or in the plan's order (round_order's, one mirrored draw per pair of
// rounds).
enum class Starts { window_shuffle, plan };

struct PositionSim {
  int configs = 2;  // config 0 is the baseline, config 1 its A/A twin
  int repeats = 3;
  Effect effect = Effect::alternating;
  double size = 0.05;  // the effect, as a share of a step's time
  Windows windows = Windows::shared;
  Starts starts = Starts::plan;
  double precision = 0;  // measure.precision; 0: the planned repeats only
  int max_rounds = 20;   // precision's rounds in all, at most (budget_s's stand-in)
  int blocks = 10;
  double process_sd = 0.002;  // log sd of a process's speed
  double block_sd = 0.005;    // log sd of a block's
};

struct PositionOutcome {
  int runs = 0;
  int different = 0;  // the reported interval excludes 1
  double rounds = 0;  // mean rounds run
};

namespace detail {

inline double position_effect(const PositionSim& s, int64_t p, int64_t q, int64_t window_size,
                              int64_t first_batch) {
  switch (s.effect) {
    case Effect::none:
      return 0;
    case Effect::alternating:
      return p % 2 == 1 ? s.size : 0;
    case Effect::ends:
      return q == 0 || q == window_size - 1 ? -s.size : 0;
    case Effect::first:
      return q == 0 ? -s.size : 0;
    case Effect::drift:
      return s.size * static_cast<double>(p) / static_cast<double>(first_batch);
  }
  return 0;
}

struct Trial {
  int64_t config = 0;
  int64_t repeat = 0;
};

// One window's trials (in plan order) run: their start order, then their
// blocks (one a cycle, paired by cycle within the window's group).
template <class Rng>
void run_window(const PositionSim& s, const std::vector<Trial>& plan, int64_t window,
                int64_t* position, int64_t first_batch, Rng& rng,
                std::map<int64_t, host::ConfigSamples>& out) {
  std::vector<size_t> order(plan.size());
  std::iota(order.begin(), order.end(), 0);
  if (s.starts == Starts::window_shuffle) random::shuffle(order, rng);
  const double drift_sd = 0.02;  // the machine's, common to a cycle: pairing removes it
  std::vector<double> cycle_drift(static_cast<size_t>(s.blocks));
  for (auto& d : cycle_drift) d = random::normal(rng, 0.0, drift_sd);
  for (size_t q = 0; q < order.size(); ++q) {
    const Trial& t = plan[order[q]];
    const double slow =
        position_effect(s, *position + static_cast<int64_t>(q), static_cast<int64_t>(q),
                        static_cast<int64_t>(order.size()), first_batch) +
        random::normal(rng, 0.0, s.process_sd);
    host::RunSamples run;
    run.repeat = t.repeat;
    run.group = "w" + std::to_string(window);
    for (int b = 0; b < s.blocks; ++b) {
      const double log_time =
          slow + cycle_drift[static_cast<size_t>(b)] + random::normal(rng, 0.0, s.block_sd);
      run.values.push_back(std::exp(-log_time));  // throughput: 1 / time
      run.cycles.emplace_back(b);
    }
    host::index_run(run);
    auto& c = out[t.config];
    c.config_index = t.config;
    c.config = host::Json::object();
    ++c.trials;
    ++c.ok;
    c.runs.push_back(std::move(run));
  }
  *position += static_cast<int64_t>(order.size());
}

inline std::vector<Trial> round_trials(const std::vector<uint64_t>& configs, uint64_t order_seed,
                                       int64_t round) {
  std::vector<Trial> out;
  for (uint64_t c : host::round_order(configs, order_seed, round)) {
    out.push_back({static_cast<int64_t>(c), round});
  }
  return out;
}

inline std::vector<host::ConfigSamples> as_vector(
    const std::map<int64_t, host::ConfigSamples>& by_config) {
  std::vector<host::ConfigSamples> v;
  for (const auto& [i, c] : by_config) v.push_back(c);
  return v;
}

}  // namespace detail

// One simulated run: its first batch (repeats rounds in round_order's
// orders, in one window or one per round), then, with precision, rounds
// (each its own window) until precision_status says done or max_rounds.
// True when the run's reported interval for config 1 against the baseline
// excludes 1 (at the level compare reports it: kSequentialLevel when
// the run looked after rounds).
template <class Rng>
bool simulate_run(const PositionSim& s, uint64_t order_seed, Rng& rng, int* rounds_run) {
  std::vector<uint64_t> all(static_cast<size_t>(s.configs));
  std::iota(all.begin(), all.end(), 0);
  std::map<int64_t, host::ConfigSamples> samples;
  const int64_t first_batch = static_cast<int64_t>(s.configs) * s.repeats;
  int64_t position = 0;
  if (s.windows == Windows::shared) {
    std::vector<detail::Trial> plan;
    for (int64_t r = 0; r < s.repeats; ++r) {
      const auto round = detail::round_trials(all, order_seed, r);
      plan.insert(plan.end(), round.begin(), round.end());
    }
    detail::run_window(s, plan, 0, &position, first_batch, rng, samples);
  } else {
    for (int64_t r = 0; r < s.repeats; ++r) {
      detail::run_window(s, detail::round_trials(all, order_seed, r), r, &position, first_batch,
                         rng, samples);
    }
  }
  int64_t rounds = s.repeats;
  if (s.precision > 0) {
    std::set<int64_t> done;
    for (;;) {
      const int look = static_cast<int>(rounds - s.repeats + 1);
      const auto status = host::precision_status(detail::as_vector(samples), host::Json::object(),
                                                 s.precision, look, done);
      for (const auto& c : status.configs) {
        if (c.done()) done.insert(c.config_index);
      }
      if (status.done || rounds >= s.max_rounds) break;
      std::vector<uint64_t> open;
      for (const auto& c : status.configs) {
        if (!c.done() || c.baseline) open.push_back(static_cast<uint64_t>(c.config_index));
      }
      detail::run_window(s, detail::round_trials(open, order_seed, rounds), rounds, &position,
                         first_batch, rng, samples);
      ++rounds;
    }
  }
  *rounds_run = static_cast<int>(rounds);
  const double level = s.precision > 0 ? host::kSequentialLevel : 0.95;
  const auto e = host::estimate_ratio(samples[0].runs, samples[1].runs, level);
  return e && (e->low > 1 || e->high < 1);
}

// `runs` A/A runs, each with its own order_seed.
inline PositionOutcome simulate(const PositionSim& s, int runs, uint64_t seed) {
  random::SplitMix64 rng(seed);
  PositionOutcome o;
  for (int i = 0; i < runs; ++i) {
    int rounds = 0;
    o.different += simulate_run(s, random::bits64(rng), rng, &rounds);
    o.rounds += rounds;
    ++o.runs;
  }
  if (o.runs > 0) o.rounds /= o.runs;
  return o;
}

}  // namespace gpusweep::test
