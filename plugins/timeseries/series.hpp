// Synthetic hourly series for the timeseries workload: linear trend, daily
// and weekly seasonality and Gaussian noise, each series with its own
// amplitudes, standardised with the statistics of its training part.
#pragma once

#include <gpusweep/torchkit/seeding.hpp>

#include <cstdint>
#include <vector>

namespace gpusweep::timeseries {

// Each series draws from its own stream.
using torchkit::derive_seed;

struct SeriesSet {
  int64_t count = 0;
  int64_t length = 0;
  int64_t train_length = 0;   // the first part; [train_length, length) is held out
  std::vector<float> values;  // standardised, series after series: count x length

  const float* series(int64_t i) const { return values.data() + i * length; }
};

// count series of length steps drawn from seed (one generator per series).
// Each is standardised with the mean and standard deviation of its first
// train_length values, so that nothing of the held-out part leaks into
// training.
SeriesSet make_series(int64_t count, int64_t length, int64_t train_length, uint64_t seed);

}  // namespace gpusweep::timeseries
