// The design-based ratio estimate on synthetic runs with a known effect,
// shared drift and process effects.
#include "analysis/ratio_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace gpusweep::host;

namespace {

struct ModelWorld {
  double ratio = 1.05;     // true y / x
  double block_sd = 0.01;  // per-block noise (log scale)
  double drift_sd = 0.0;   // shared by every trial in a cycle (a busy neighbour)
  double process_sd = 0;   // per trial process (memory layout, thread placement)
  int repeats = 3;
  int cycles = 12;
};

// x and y interleaved: repeat r's two trials share a group, block c of each
// ran in cycle c, and the machine's drift in cycle c hits both.
std::pair<std::vector<RunSamples>, std::vector<RunSamples>> simulate(const ModelWorld& w,
                                                                     std::mt19937_64& rng) {
  std::normal_distribution<double> z(0, 1);
  std::vector<RunSamples> x(w.repeats), y(w.repeats);
  for (int r = 0; r < w.repeats; ++r) {
    const double px = w.process_sd * z(rng), py = w.process_sd * z(rng);
    x[r].repeat = y[r].repeat = r;
    x[r].group = y[r].group = "g" + std::to_string(r);
    double drift = 0;
    for (int c = 0; c < w.cycles; ++c) {
      drift = 0.7 * drift + w.drift_sd * z(rng);  // slow, autocorrelated
      x[r].values.push_back(100 * std::exp(px + drift + w.block_sd * z(rng)));
      y[r].values.push_back(100 * w.ratio * std::exp(py + drift + w.block_sd * z(rng)));
      x[r].cycles.emplace_back(c);
      y[r].cycles.emplace_back(c);
    }
  }
  return {x, y};
}

void forget_pairing(std::vector<RunSamples>& runs) {
  for (auto& r : runs) {
    r.group.reset();
    r.cycles.clear();
  }
}

double half_width(const RatioEstimate& e) { return (e.high - e.low) / 2; }

}  // namespace

TEST_CASE("shared drift does not widen the interval of blocks paired by cycle",
          "[analysis][stats]") {
  std::mt19937_64 rng(7);
  ModelWorld w;
  w.drift_sd = 0.08;  // the machine swings by tens of percent
  w.repeats = 1;
  std::vector<double> paired_hw, unpaired_hw;
  int covered = 0;
  const int runs = 200;
  for (int i = 0; i < runs; ++i) {
    auto [x, y] = simulate(w, rng);
    const auto paired = estimate_ratio(x, y);
    REQUIRE(paired);
    CHECK(paired->design == RatioDesign::one_process);
    CHECK(paired->paired_blocks == w.cycles);
    covered += paired->low <= w.ratio && paired->high >= w.ratio;
    paired_hw.push_back(half_width(*paired));
    // The same blocks unpaired (as if one trial ran after the other): the
    // drift is all noise.
    forget_pairing(x);
    forget_pairing(y);
    const auto unpaired = estimate_ratio(x, y);
    REQUIRE(unpaired);
    CHECK(unpaired->paired_blocks == 0);
    unpaired_hw.push_back(half_width(*unpaired));
  }
  std::sort(paired_hw.begin(), paired_hw.end());
  std::sort(unpaired_hw.begin(), unpaired_hw.end());
  const double paired_median = paired_hw[runs / 2], unpaired_median = unpaired_hw[runs / 2];
  INFO("median half-width paired " << paired_median << ", unpaired " << unpaired_median);
  CHECK(paired_median < 0.015);
  CHECK(unpaired_median > 4 * paired_median);
  CHECK(covered >= 0.93 * runs);
}

TEST_CASE("process effects widen the interval: repeats are their own level", "[analysis][stats]") {
  std::mt19937_64 rng(11);
  ModelWorld w;
  w.process_sd = 0.03;
  w.block_sd = 0.002;
  w.repeats = 5;
  const auto [x, y] = simulate(w, rng);
  const auto e = estimate_ratio(x, y);
  REQUIRE(e);
  CHECK(e->design == RatioDesign::repeats);
  CHECK(e->repeats == 5);
  CHECK(e->df == 4);
  CHECK(e->low < 1.05);
  CHECK(e->high > 1.05);
  // One repeat's blocks alone know nothing of the process: far narrower,
  // and the note says what it cannot know.
  const auto one = estimate_ratio({x[0]}, {y[0]});
  REQUIRE(one);
  CHECK(one->design == RatioDesign::one_process);
  CHECK(half_width(*e) > 4 * half_width(*one));
  CHECK_THAT(design_note(*one), Catch::Matchers::Contains("one process per config"));
  CHECK(design_note(*e).empty());
}

TEST_CASE("intervals keep their coverage at 2, 3 and 10 repeats under drift and process effects",
          "[analysis][stats]") {
  for (int repeats : {2, 3, 10}) {
    std::mt19937_64 rng(100 + static_cast<uint64_t>(repeats));
    ModelWorld w;
    w.ratio = 1.0;  // A/A
    w.drift_sd = 0.05;
    w.process_sd = 0.02;
    w.repeats = repeats;
    int covered = 0;
    const int runs = 400;
    for (int i = 0; i < runs; ++i) {
      const auto [x, y] = simulate(w, rng);
      const auto e = estimate_ratio(x, y);
      covered += e && e->low <= 1 && e->high >= 1;
    }
    INFO(repeats << " repeats: " << covered << " of " << runs << " intervals hold 1");
    CHECK(covered >= 0.93 * runs);
    CHECK(covered <= 0.985 * runs);  // not merely wide
  }
}

TEST_CASE("one repeat's interval holds under drift, and misses process effects as its note says",
          "[analysis][stats]") {
  auto coverage = [](double process_sd) {
    std::mt19937_64 rng(21);
    ModelWorld w;
    w.ratio = 1.0;
    w.drift_sd = 0.05;
    w.process_sd = process_sd;
    w.repeats = 1;
    int covered = 0;
    for (int i = 0; i < 400; ++i) {
      const auto [x, y] = simulate(w, rng);
      const auto e = estimate_ratio(x, y);
      covered += e && e->low <= 1 && e->high >= 1;
    }
    return covered / 400.0;
  };
  CHECK(coverage(0) >= 0.93);
  // Processes that differ by 2% are beyond what one process's blocks know:
  // the reason for the note and for repeats.
  CHECK(coverage(0.02) < 0.8);
}

TEST_CASE("repeats pair by identity, not by position", "[analysis][stats]") {
  // Each round ran at its own speed (the machine was 30% slower in round 1);
  // y's repeat 1 failed and a repeat 3 exists only for y.
  std::vector<RunSamples> x, y;
  const double round_speed[] = {1.0, 0.7, 1.2, 0.9};
  for (int r : {0, 1, 2}) x.push_back(RunSamples{r, std::nullopt, "", {100 * round_speed[r]}, {}});
  for (int r : {0, 2, 3}) y.push_back(RunSamples{r, std::nullopt, "", {110 * round_speed[r]}, {}});
  const auto e = estimate_ratio(x, y);
  REQUIRE(e);
  CHECK(e->repeats == 2);  // rounds 0 and 2
  CHECK(e->ratio == Approx(1.1));
  CHECK(e->low == Approx(1.1));
}

TEST_CASE("runs on different machines are flagged, and too little data gives no estimate",
          "[analysis][stats]") {
  std::mt19937_64 rng(3);
  ModelWorld w;
  auto [x, y] = simulate(w, rng);
  x[1].machine = "node1|cpu|[]";
  y[1].machine = "node2|cpu|[]";
  const auto e = estimate_ratio(x, y);
  REQUIRE(e);
  CHECK(e->across_machines);
  CHECK_THAT(design_note(*e), Catch::Matchers::Contains("across machines"));
  CHECK_FALSE(estimate_ratio({RunSamples{0, std::nullopt, "", {100}, {}}},
                             {RunSamples{0, std::nullopt, "", {110}, {}}}));
}

namespace {

// The per-repeat log ratio as the model computed it before RunIndex: each
// of x's cycles' logs kept apart and averaged, y's blocks in their order.
// Nothing where fewer than two blocks pair (the model then compares means).
std::optional<double> reference_log_ratio(const RunSamples& x, const RunSamples& y) {
  std::map<int64_t, std::vector<double>> x_at;
  for (size_t i = 0; i < x.values.size() && i < x.cycles.size(); ++i) {
    if (x.cycles[i] && x.values[i] > 0) x_at[*x.cycles[i]].push_back(std::log(x.values[i]));
  }
  std::vector<double> series;
  for (size_t i = 0; i < y.values.size() && i < y.cycles.size(); ++i) {
    if (!y.cycles[i] || !(y.values[i] > 0)) continue;
    auto it = x_at.find(*y.cycles[i]);
    if (it == x_at.end()) continue;
    double xl = 0;
    for (double l : it->second) xl += l / static_cast<double>(it->second.size());
    series.push_back(std::log(y.values[i]) - xl);
  }
  if (series.size() < 2) return std::nullopt;
  double mean = 0;
  for (double d : series) mean += d / static_cast<double>(series.size());
  return mean;
}

}  // namespace

TEST_CASE(
    "the run index gives the numbers of pairing blocks by cycle, to the last bit where some do not "
    "pair",
    "[host][ratio]") {
  std::mt19937_64 rng(606);
  std::uniform_real_distribution<double> u(0.5, 2);
  std::uniform_int_distribution<int> pick(0, 9);
  int checked = 0, summed = 0;
  for (int world = 0; world < 200; ++world) {
    // Runs of a shape the fast paths must not get wrong: several blocks in
    // one cycle, cycles going back, blocks without a cycle or a time.
    std::vector<RunSamples> x(3), y(3);
    for (int r = 0; r < 3; ++r) {
      for (auto* side : {&x, &y}) {
        RunSamples& run = (*side)[static_cast<size_t>(r)];
        run.repeat = r;
        run.group = "g";
        int64_t cycle = 0;
        std::mt19937_64 walk(static_cast<uint64_t>(world * 3 + r));  // x's and y's alike
        if (world % 2 == 0) {
          // Every other world the usual shape, one block a cycle in a row,
          // each side from its own start: overlapping partly, or not at all.
          cycle = pick(rng) * 3;
          for (int b = 0; b < 30; ++b) {
            run.values.push_back(u(rng));
            run.cycles.push_back(cycle++);
          }
          continue;
        }
        for (int b = 0; b < 30; ++b) {
          const int k = pick(walk);
          cycle += k == 0 ? -3 : k < 3 ? 0 : 1;
          const int own = pick(rng);  // a side's own gaps
          run.values.push_back(own == 9 ? 0.0 : u(rng));
          run.cycles.push_back(own == 8 ? std::nullopt : std::optional<int64_t>(cycle));
        }
      }
    }
    const auto plain = repeat_log_ratios(x, y);
    auto xi = x, yi = y;
    for (auto& r : xi) index_run(r);
    for (auto& r : yi) index_run(r);
    const auto indexed = repeat_log_ratios(xi, yi);
    REQUIRE(plain.size() == 3);
    for (int r = 0; r < 3; ++r) {
      const auto ref = reference_log_ratio(x[static_cast<size_t>(r)], y[static_cast<size_t>(r)]);
      CHECK(indexed.at(r) == plain.at(r));
      if (!ref) continue;  // under two blocks paired: the model compares means instead
      const auto& xc = x[static_cast<size_t>(r)].cycles;
      const auto& yc = y[static_cast<size_t>(r)].cycles;
      if (world % 2 == 0 && xc.front() == yc.front()) {
        // Every block paired: the model takes the difference of the sums,
        // equal to the mean of the differences within rounding.
        CHECK(plain.at(r) == Approx(*ref).margin(1e-13));
        ++summed;
      } else {
        CHECK(plain.at(r) == *ref);
      }
      ++checked;
    }
    const auto a = estimate_ratio(x, y), b = estimate_ratio(xi, yi);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->ratio == b->ratio);
    CHECK(a->low == b->low);
    CHECK(a->paired_blocks == b->paired_blocks);
  }
  // Most worlds pair (the rest checked against the unindexed path only).
  CHECK(checked >= 450);
  CHECK(summed >= 10);
}
