// An LSTM layer with its backward through time written out by hand: the
// same function and parameters as torch::nn::LSTM (gate order i, f, g, o;
// two biases; zero initial state), but one autograd node per layer instead
// of about a dozen per time step, the element-wise backward as one loop per
// step, and the weight gradients as one matrix product over all steps.
// LibTorch 1.13's CPU LSTM records every cell op for autograd; on a small
// model that bookkeeping, not arithmetic, is most of the step. LibTorch 2.x
// runs its CPU LSTM on oneDNN and is as fast (bench/README.md), so this is
// lstm_impl=fused, no longer the default.
#pragma once

#include <torch/torch.h>

namespace gpusweep::timeseries {

// x: [T, B, I] time-major; w_ih [4H, I], w_hh [4H, H], b_ih and b_hh [4H].
// Returns the hidden state of every step, [T, B, H], differentiable with
// respect to all five inputs. Under CPU or CUDA autocast the matrix products
// run in the autocast dtype and the element-wise work in float32, as
// autocast treats linear layers.
torch::Tensor fused_lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih,
                               const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                               const torch::Tensor& b_hh);

}  // namespace gpusweep::timeseries
