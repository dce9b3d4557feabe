// Series generation and standardisation for timeseries; see series.hpp.
#include "series.hpp"

#include <gpusweep/random.hpp>

#include <cmath>
#include <random>
#include <stdexcept>

namespace gpusweep::timeseries {
namespace {

constexpr double kTwoPi = 6.283185307179586;
constexpr double kDailyPeriod = 24;    // hours
constexpr double kWeeklyPeriod = 168;  // hours
// Per-series shape, before the series' own offset and scale: the seasonal
// amplitudes and the noise differ by series so that no single rule fits all.
constexpr double kMinDaily = 0.5, kMaxDaily = 2.0;
constexpr double kMinWeekly = 0.3, kMaxWeekly = 1.5;
constexpr double kMaxDrift = 2.0;  // total trend over the series, either sign
constexpr double kMinNoise = 0.1, kMaxNoise = 0.4;
// Offset and scale in raw units: standardisation has to undo them.
constexpr double kMaxOffset = 10.0;
constexpr double kMinScale = 0.5, kMaxScale = 20.0;

}  // namespace

SeriesSet make_series(int64_t count, int64_t length, int64_t train_length, uint64_t seed) {
  if (train_length < 2 || train_length > length) {
    throw std::invalid_argument("the training part must hold 2 to length values");
  }
  SeriesSet s;
  s.count = count;
  s.length = length;
  s.train_length = train_length;
  s.values.resize(static_cast<size_t>(count * length));
  std::vector<double> raw(static_cast<size_t>(length));
  for (int64_t i = 0; i < count; ++i) {
    std::mt19937_64 rng(derive_seed(seed, static_cast<uint64_t>(i)));
    auto uniform = [&](double lo, double hi) { return random::uniform_real(rng, lo, hi); };
    const double offset = uniform(-kMaxOffset, kMaxOffset);
    const double scale = std::exp(uniform(std::log(kMinScale), std::log(kMaxScale)));
    const double slope = uniform(-kMaxDrift, kMaxDrift) / static_cast<double>(length);
    const double daily = uniform(kMinDaily, kMaxDaily);
    const double weekly = uniform(kMinWeekly, kMaxWeekly);
    const double daily_phase = uniform(0, kTwoPi);
    const double weekly_phase = uniform(0, kTwoPi);
    const double noise_sd = uniform(kMinNoise, kMaxNoise);
    for (int64_t t = 0; t < length; ++t) {
      const auto x = static_cast<double>(t);
      raw[t] =
          offset + scale * (slope * x + daily * std::sin(kTwoPi * x / kDailyPeriod + daily_phase) +
                            weekly * std::sin(kTwoPi * x / kWeeklyPeriod + weekly_phase) +
                            random::normal(rng, 0.0, noise_sd));
    }
    double mean = 0;
    for (int64_t t = 0; t < train_length; ++t) mean += raw[t];
    mean /= static_cast<double>(train_length);
    double var = 0;
    for (int64_t t = 0; t < train_length; ++t) var += (raw[t] - mean) * (raw[t] - mean);
    const double sd = std::sqrt(var / static_cast<double>(train_length - 1));
    float* out = s.values.data() + i * length;
    for (int64_t t = 0; t < length; ++t) out[t] = static_cast<float>((raw[t] - mean) / sd);
  }
  return s;
}

}  // namespace gpusweep::timeseries
