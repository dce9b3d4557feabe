// The transformer's data source: a random hierarchical order-2 Markov chain
// over a small vocabulary, sampled on the host at setup. Its entropy rate,
// the best loss any model can reach, is computed exactly.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

namespace gpusweep::transformer {

class MarkovChain {
 public:
  // Draws the chain from `rng`: for each previous token b a bigram row
  // m_b ~ Dirichlet(0.2), then for each pair (a, b) the next-token row
  // P(. | a, b) ~ Dirichlet(8 m_b + 0.01), so that the previous token sets
  // the broad shape and the one before refines it. Then finds the stationary
  // distribution over pairs.
  MarkovChain(int64_t vocab, std::mt19937_64& rng);

  // `streams` independent sequences of `length` tokens, [streams, length]
  // int64 on the host, each starting from a pair drawn from the stationary
  // distribution (so every window of every stream is a stationary sample).
  torch::Tensor sample(int64_t streams, int64_t length, std::mt19937_64& rng) const;

  // Entropy rate in nats per token: sum over pairs of pi(a, b) H(P(. | a, b)).
  double entropy_rate() const { return entropy_rate_; }
  // H(next | previous token) under the stationary distribution: the best loss
  // with one token of context, where a model that has learnt only bigram
  // statistics plateaus.
  double bigram_entropy() const { return bigram_entropy_; }
  int64_t vocab() const { return vocab_; }

 private:
  void find_stationary();

  int64_t vocab_;
  std::vector<double> next_;        // [a][b][c] = P(c | a, b), a two tokens back
  std::vector<double> next_cdf_;    // row-wise cumulative sums of next_
  std::vector<double> pair_cdf_;    // cumulative stationary distribution over (a, b)
  std::vector<double> stationary_;  // pi(a, b)
  double entropy_rate_ = 0;
  double bigram_entropy_ = 0;
};

}  // namespace gpusweep::transformer
