// Change points in a simulated history (issue 57, "Honest figures:
// History"): find_change_points on stationary series of 100 runs and on a
// 5% step, over run-to-run spreads measured here and noise shapes, each rate
// with its 95% Wilson interval. The figures are in
// bench/results/2026-11-28-change-points.md.
//
//   bench/run.py change_points_sim [-- --series N]
#include "analysis/change_points.hpp"
#include "sim_flags.hpp"
#include "wilson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace gpusweep::host;
using gpusweep::test::rate;

namespace {

enum class Shape { gaussian, t3, drift, spikes };

const char* shape_name(Shape s) {
  switch (s) {
    case Shape::gaussian:
      return "Gaussian";
    case Shape::t3:
      return "t(3), same sd";
    case Shape::drift:
      return "Gaussian + 3% drift";
    case Shape::spikes:
      return "Gaussian + 2% runs 30% slow";
  }
  return "";
}

// Noise from mt19937's raw draws, the same on every standard library.
class Noise {
 public:
  explicit Noise(std::uint32_t seed) : rng_(seed) {}
  double uniform() { return (static_cast<double>(rng_()) + 0.5) / 4294967296.0; }
  double normal() {
    return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
  }
  // Student's t with 3 degrees of freedom scaled to unit variance.
  double t3() {
    double chi2 = 0;
    for (int i = 0; i < 3; ++i) {
      const double z = normal();
      chi2 += z * z;
    }
    return normal() / std::sqrt(chi2 / 3) / std::sqrt(3.0);
  }

 private:
  std::mt19937 rng_;
};

// n runs of log throughput: level 0, spread sd of the given shape; drift
// moves the level by 3% over 100 runs, spikes make 2% of runs 30% slow.
std::vector<SeriesPoint> series(std::size_t n, double sd, Shape shape, Noise& noise) {
  std::vector<SeriesPoint> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    double v = sd * (shape == Shape::t3 ? noise.t3() : noise.normal());
    if (shape == Shape::drift) v += std::log(0.97) * static_cast<double>(i) / 99;
    if (shape == Shape::spikes && noise.uniform() < 0.02) v += std::log(0.7);
    s[i].log_value = v;
  }
  return s;
}

// Whether a point lies within 3 runs of the step at `at`; how many others.
struct Hits {
  bool found = false;
  int others = 0;
};
Hits hits(const std::vector<ChangePoint>& points, std::size_t at) {
  Hits h;
  for (const ChangePoint& p : points) {
    const bool near = p.index + 3 >= at && p.index <= at + 3;
    h.found = h.found || near;
    h.others += near ? 0 : 1;
  }
  return h;
}

struct Row {
  int series = 0;
  int any_false = 0, false_points = 0;  // stationary, 100 runs
  int step_found = 0, step_others = 0;  // 5% step at run 50 of 100
  int within3 = 0, within10 = 0;        // online: runs after the step
  std::vector<int> delays;
};

constexpr std::size_t kRuns = 100, kStepAt = 50;

// One condition's three experiments, drawing from one seeded stream.
Row simulate(double sd, Shape shape, int n_series, std::uint32_t seed) {
  Noise noise(seed);
  Row r;
  r.series = n_series;
  const double step = std::log(0.95);
  for (int k = 0; k < n_series; ++k) {
    const auto flat = find_change_points(series(kRuns, sd, shape, noise));
    r.false_points += static_cast<int>(flat.size());
    r.any_false += flat.empty() ? 0 : 1;

    auto s = series(kRuns, sd, shape, noise);
    for (std::size_t i = kStepAt; i < kRuns; ++i) s[i].log_value += step;
    const Hits h = hits(find_change_points(s), kStepAt);
    r.step_found += h.found ? 1 : 0;
    r.step_others += h.others;

    // History as it grows: the step is found after how many runs past it.
    for (int after = 1; after <= 10; ++after) {
      const std::vector<SeriesPoint> so_far(s.begin(), s.begin() + kStepAt + after);
      if (!hits(find_change_points(so_far), kStepAt).found) continue;
      r.delays.push_back(after);
      r.within3 += after <= 3 ? 1 : 0;
      ++r.within10;
      break;
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 1000;
  gpusweep::bench::SimFlags("change_points_sim",
                            "find_change_points on simulated throughput histories: false points "
                            "and a 5% step's detection and delay.")
      .option("--series", &n, "simulated series a row")
      .at_least(1)
      .parse(argc, argv);
  std::printf(
      "find_change_points defaults (p = 0.001, window 50, min segment 3), %d series a row\n", n);
  std::printf(
      "stationary: 100 runs; step: 5%% slower from run 50 of 100, found = a point within 3 runs "
      "of it; delay: runs after the step before history (growing) first shows it, up to 10\n\n");
  std::uint32_t seed = 2026;
  for (double sd : {0.005, 0.01, 0.02, 0.035}) {
    for (Shape shape : {Shape::gaussian, Shape::t3, Shape::drift, Shape::spikes}) {
      const Row r = simulate(sd, shape, n, seed++);
      std::vector<int> d = r.delays;
      std::sort(d.begin(), d.end());
      std::printf("sd %.1f%%, %s\n", 100 * sd, shape_name(shape));
      std::printf("  stationary: series with a false point %s; false points per series %.3f\n",
                  rate(r.any_false, r.series).c_str(),
                  static_cast<double>(r.false_points) / r.series);
      std::printf("  5%% step: found %s; other points per series %.3f\n",
                  rate(r.step_found, r.series).c_str(),
                  static_cast<double>(r.step_others) / r.series);
      std::printf("  delay: within 3 runs %s; median %s runs\n", rate(r.within3, r.series).c_str(),
                  d.empty() ? "-" : std::to_string(d[d.size() / 2]).c_str());
      std::fflush(stdout);
    }
  }
}
