// Change points in a workload's throughput history (issue 57, item 3): one
// point per run, the method Apache Otava (formerly Hunter) publishes, with a
// minimum segment length as its users added (apache/otava pull request 150).
//
// The method (Fleming et al., "Hunter: Using Change Point Detection to Hunt
// for Performance Regressions", ICPE 2023): E-divisive means (Matteson and
// James 2014) proposes the split of a window of `window` points that
// maximises the energy distance between the two sides; Student's t-test
// between the resulting segments accepts it at 10x the significance (the
// "weak" points), windows overlap by half; then the weakest point over the
// whole series is dropped and its neighbours re-tested until every one has
// p < max_p. Deterministic: the t-test replaces E-divisive's permutation test.
//
// Why this and not asv's step detection (a piecewise-constant L1 fit whose
// penalty is chosen by an information criterion): that penalty sets no error
// rate, so how many false steps a stationary series of 100 runs shows is
// whatever the criterion gives, and there is no p-value to print beside a
// change. Here max_p bounds each accepted split's test, and
// bench/change_points (bench/results/2026-11-28-change-points.md) measures
// the false points per series that remain after the search. asv's L1 cost
// resists single spikes by itself; here the minimum segment length does it
// (a spike cannot form a segment of its own) and the energy distance, with
// |x - y| rather than squares, keeps one spike from dominating the split. The
// price is delay: a step needs min_segment points after it to be found, so
// the default of 3 is the shortest that still tells a spike pair from a step.
#pragma once

#include <cstddef>
#include <vector>

namespace gpusweep::host {

struct SeriesPoint {
  // The log of the run's throughput: levels and their ratio are taken on
  // the log scale, where a slowdown of 5% is the same step at any level.
  double log_value = 0;
  // The run's own standard error of log_value (0 when unknown). A segment's
  // variance is never taken below its points' mean squared error: a short
  // segment of values alike by chance would otherwise give a huge t.
  double std_error = 0;
};

struct ChangePointOptions {
  double max_p = 0.001;         // Otava's default significance
  std::size_t window = 50;      // Otava's default window (points)
  std::size_t min_segment = 3;  // no segment, first and last included, shorter
  // Changes smaller than this (relative, either way) are dropped even when
  // significant; 0 keeps every significant one, as Otava does by default.
  double min_magnitude = 0;
};

struct ChangePoint {
  std::size_t index = 0;  // the first point of the new level
  double before = 0;      // mean log_value of the segment before index
  double after = 0;       // mean log_value of the segment from index on
  double ratio = 1;       // exp(after - before): the new level over the old
  double p_value = 1;     // t-test between the two segments
  double qhat = 0;        // E-divisive's statistic when the split was proposed
};

// The change points of a series, in order of index. Needs no minimum length:
// a series shorter than 2 * min_segment has none. Throws
// std::invalid_argument on min_segment < 1, window < 2 * min_segment or
// max_p outside (0, 1), and on a value or error that is not finite (or an
// error below 0).
std::vector<ChangePoint> find_change_points(const std::vector<SeriesPoint>& series,
                                            const ChangePointOptions& options = {});

}  // namespace gpusweep::host
