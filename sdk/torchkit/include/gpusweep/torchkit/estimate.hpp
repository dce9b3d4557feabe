// An evaluation's result with its uncertainty: the mean of per-unit values
// (episodes, images, windows) and its standard error, for a quality metric
// `m` reported as `m` and `m_se` (the host's non-inferiority test uses it).
#pragma once

#include <torch/torch.h>

#include <cmath>

namespace gpusweep::torchkit {

struct Estimate {
  double mean = 0;
  double se = NAN;  // sample standard deviation / sqrt(n); NaN for one value
};

// values: one number per unit, any shape; read back to the host in one sync.
inline Estimate mean_and_se(const torch::Tensor& values) {
  const torch::Tensor v = values.detach().to(torch::kDouble).flatten();
  const int64_t n = v.numel();
  if (n < 2) return {n == 1 ? v.item<double>() : NAN, NAN};
  const torch::Tensor both =
      torch::stack({v.mean(), v.std() / std::sqrt(static_cast<double>(n))}).cpu();
  return {both[0].item<double>(), both[1].item<double>()};
}

}  // namespace gpusweep::torchkit
