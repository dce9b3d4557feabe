// The order-2 Markov chain; see markov_chain.hpp.
#include "markov_chain.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace gpusweep::transformer {
namespace {

constexpr double kBigramConcentration = 0.2;
constexpr double kRowConcentration = 8.0;
constexpr double kRowFloor = 0.01;
// Power iteration stops when an iteration moves pi by less than this (L1);
// well below the float32 precision of any loss it is compared with.
constexpr double kStationaryTolerance = 1e-14;
constexpr int64_t kMaxIterations = 100000;

// One Dirichlet(alpha) draw, written into `out`.
void dirichlet(const std::vector<double>& alpha, std::mt19937_64& rng, double* out) {
  double total = 0;
  for (size_t i = 0; i < alpha.size(); ++i) {
    out[i] = random::gamma(rng, alpha[i]);
    total += out[i];
  }
  // All draws can underflow to zero only with absurdly small alphas; fall back
  // to uniform rather than divide by zero.
  for (size_t i = 0; i < alpha.size(); ++i) {
    out[i] = total > 0 ? out[i] / total : 1.0 / static_cast<double>(alpha.size());
  }
}

// Index of the first cumulative value above u (the last one if rounding left
// the total a hair below u).
int64_t draw(const double* cdf, int64_t n, double u) {
  const double* it = std::upper_bound(cdf, cdf + n, u);
  return std::min<int64_t>(it - cdf, n - 1);
}

}  // namespace

MarkovChain::MarkovChain(int64_t vocab, std::mt19937_64& rng) : vocab_(vocab) {
  const auto v = static_cast<size_t>(vocab);
  std::vector<double> bigram(v * v);
  const std::vector<double> flat(v, kBigramConcentration);
  for (size_t b = 0; b < v; ++b) dirichlet(flat, rng, &bigram[b * v]);

  next_.resize(v * v * v);
  std::vector<double> alpha(v);
  for (size_t a = 0; a < v; ++a) {
    for (size_t b = 0; b < v; ++b) {
      for (size_t c = 0; c < v; ++c) alpha[c] = kRowConcentration * bigram[b * v + c] + kRowFloor;
      dirichlet(alpha, rng, &next_[(a * v + b) * v]);
    }
  }
  next_cdf_.resize(next_.size());
  for (size_t row = 0; row < v * v; ++row) {
    std::partial_sum(&next_[row * v], &next_[row * v] + v, &next_cdf_[row * v]);
  }
  find_stationary();

  entropy_rate_ = 0;
  for (size_t row = 0; row < v * v; ++row) {
    double h = 0;
    for (size_t c = 0; c < v; ++c) {
      const double p = next_[row * v + c];
      if (p > 0) h -= p * std::log(p);
    }
    entropy_rate_ += stationary_[row] * h;
  }

  // P(c | b) = sum_a pi(a, b) P(c | a, b) / sum_a pi(a, b).
  bigram_entropy_ = 0;
  std::vector<double> row(v);
  for (size_t b = 0; b < v; ++b) {
    std::fill(row.begin(), row.end(), 0.0);
    double mass = 0;
    for (size_t a = 0; a < v; ++a) {
      const double w = stationary_[a * v + b];
      mass += w;
      for (size_t c = 0; c < v; ++c) row[c] += w * next_[(a * v + b) * v + c];
    }
    for (size_t c = 0; c < v; ++c) {
      const double p = row[c] / mass;
      if (p > 0) bigram_entropy_ -= mass * p * std::log(p);
    }
  }
}

// pi'(b, c) = sum_a pi(a, b) P(c | a, b), from uniform until it stops moving.
// Every Dirichlet row is positive, so the pair chain is irreducible and
// aperiodic and the iteration converges to the unique stationary distribution.
void MarkovChain::find_stationary() {
  const auto v = static_cast<size_t>(vocab_);
  std::vector<double> pi(v * v, 1.0 / static_cast<double>(v * v));
  std::vector<double> next_pi(v * v);
  bool converged = false;
  for (int64_t it = 0; it < kMaxIterations && !converged; ++it) {
    std::fill(next_pi.begin(), next_pi.end(), 0.0);
    for (size_t a = 0; a < v; ++a) {
      for (size_t b = 0; b < v; ++b) {
        const double mass = pi[a * v + b];
        const double* row = &next_[(a * v + b) * v];
        double* out = &next_pi[b * v];
        for (size_t c = 0; c < v; ++c) out[c] += mass * row[c];
      }
    }
    double change = 0;
    double total = 0;
    for (size_t i = 0; i < v * v; ++i) total += next_pi[i];
    for (size_t i = 0; i < v * v; ++i) {
      next_pi[i] /= total;  // keeps rounding from drifting the mass
      change += std::abs(next_pi[i] - pi[i]);
    }
    pi.swap(next_pi);
    converged = change < kStationaryTolerance;
  }
  if (!converged) {
    throw std::runtime_error("the Markov chain's stationary distribution did not converge in " +
                             std::to_string(kMaxIterations) + " iterations");
  }
  stationary_ = pi;
  pair_cdf_.resize(pi.size());
  std::partial_sum(pi.begin(), pi.end(), pair_cdf_.begin());
}

torch::Tensor MarkovChain::sample(int64_t streams, int64_t length, std::mt19937_64& rng) const {
  if (length < 2) throw std::invalid_argument("a stream needs at least 2 tokens");
  torch::Tensor out = torch::empty({streams, length}, torch::kLong);
  int64_t* tokens = out.data_ptr<int64_t>();
  const int64_t v = vocab_;
  for (int64_t s = 0; s < streams; ++s) {
    int64_t* t = tokens + s * length;
    const int64_t pair = draw(pair_cdf_.data(), v * v, random::unit(rng) * pair_cdf_.back());
    t[0] = pair / v;
    t[1] = pair % v;
    for (int64_t i = 2; i < length; ++i) {
      const double* cdf = &next_cdf_[(t[i - 2] * v + t[i - 1]) * v];
      t[i] = draw(cdf, v, random::unit(rng) * cdf[v - 1]);
    }
  }
  return out;
}

}  // namespace gpusweep::transformer
