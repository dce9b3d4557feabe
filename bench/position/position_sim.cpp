// Position effects tied to the start order, on demand (issue 45, ttq review
// L2): A/A runs simulated through gpusweep's round_order, ratio model and
// precision rule (tests/unit/analysis/position_sim.hpp), each rate with its
// 95% Wilson interval. bench/README.md has the figures.
//
//   bench/run.py position_sim [-- --runs N]
#include "position_sim.hpp"
#include "sim_flags.hpp"
#include "wilson.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

using namespace gpusweep::test;

namespace {

void line(const PositionSim& s, int runs, const std::string& what) {
  const PositionOutcome o = simulate(s, runs, 2026);
  std::cout << what << ": called different in " << rate(o.different, o.runs) << "; mean rounds "
            << o.rounds << "\n"
            << std::flush;
}

const char* windows_name(Windows w) {
  return w == Windows::shared ? "repeats in one window" : "a window a round";
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 400;
  gpusweep::bench::SimFlags("position_sim",
                            "A/A pairs under start-order effects through the real round orders, "
                            "ratio model and precision rule.")
      .option("--runs", &runs, "simulated runs a line")
      .at_least(1)
      .parse(argc, argv);
  std::cout << "A/A pair (2 configs, 3 repeats, 10 blocks), start-order effect 5%, process sd "
               "0.2%, block sd 0.5%, "
            << runs << " runs a line\n";
  for (double precision : {0.0, 0.01}) {
    for (Starts st : {Starts::window_shuffle, Starts::plan}) {
      std::cout << "-- " << (precision > 0 ? "measure.precision 0.01 (max 20 rounds)" : "3 repeats")
                << ", starts "
                << (st == Starts::plan ? "in the plan's order (this fix)"
                                       : "in the window's first shuffle (before)")
                << "\n";
      for (Effect e : {Effect::alternating, Effect::ends, Effect::first, Effect::drift}) {
        for (Windows w : {Windows::shared, Windows::separate}) {
          PositionSim s;
          s.effect = e;
          s.windows = w;
          s.starts = st;
          s.precision = precision;
          line(s, runs, std::string(effect_name(e)) + ", " + windows_name(w));
        }
      }
    }
  }
  // ttq review L2: k configs one after another (a window a round), the
  // first and last of each round 3% faster, per-round noise about 0.5%.
  for (int configs : {4, 3, 5, 8}) {
    std::cout << "-- ttq L2: " << configs
              << " configs, a window a round, start-order effect 3%, plan order\n";
    for (int repeats : {3, 4, 6}) {
      for (Effect e : {Effect::ends, Effect::first, Effect::drift, Effect::alternating}) {
        PositionSim s;
        s.configs = configs;
        s.repeats = repeats;
        s.effect = e;
        s.size = 0.03;
        s.windows = Windows::separate;
        s.process_sd = 0.0035;
        s.block_sd = 0.002;
        line(s, runs, std::string(effect_name(e)) + ", " + std::to_string(repeats) + " rounds");
      }
    }
  }
}
