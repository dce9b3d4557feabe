// Grid coverage as tensor ops; see coverage_env.hpp. Cells are addressed by
// flat indices into the padded maps of all episodes, so reading patches and
// covering neighbourhoods are one gather and one index_fill_ for everybody.
#include "coverage_env.hpp"

#include <vector>

namespace gpusweep::marl {
namespace {

// Flat offsets of a square window of side `side` around a centre cell.
torch::Tensor window_offsets(int64_t side, int64_t row_stride, const torch::Device& device) {
  std::vector<int64_t> offsets;
  const int64_t half = side / 2;
  for (int64_t dr = -half; dr <= half; ++dr) {
    for (int64_t dc = -half; dc <= half; ++dc) offsets.push_back(dr * row_stride + dc);
  }
  return torch::tensor(offsets, torch::kLong).to(device);
}

}  // namespace

CoverageEnv::CoverageEnv(int64_t episodes, int64_t agents, const torch::Device& device)
    : episodes_(episodes), agents_(agents) {
  const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const auto longs = floats.dtype(torch::kLong);
  map_ = torch::ones({episodes, kSide * kSide}, floats);
  positions_ = torch::zeros({episodes, agents, 2}, longs);
  covered_ = torch::zeros({episodes}, floats);
  // Rows: stay, N (up), S (down), E (right), W (left).
  moves_ = torch::tensor({0, 0, -1, 0, 1, 0, 0, 1, 0, -1}, torch::kLong)
               .view({kNumActions, 2})
               .to(device);
  stride_ = torch::tensor({kSide, int64_t{1}}, torch::kLong).to(device);
  origin_ = (torch::arange(episodes, longs) * (kSide * kSide) + (kPad * kSide + kPad))
                .view({episodes, 1});
  patch_offsets_ = window_offsets(kPatch, kSide, device);
  cover_offsets_ = window_offsets(kCover, kSide, device);
  agent_ids_ = torch::eye(agents, floats).expand({episodes, agents, agents});
  border_cells_ = kSide * kSide - kCells;
}

namespace {

// Flat index of every agent's cell in the padded maps, [E, A].
torch::Tensor centres(const torch::Tensor& positions, const torch::Tensor& stride,
                      const torch::Tensor& origin) {
  return (positions * stride).sum(/*dim=*/2).add_(origin);
}

}  // namespace

void CoverageEnv::reset(torch::Generator& gen) {
  positions_.random_(/*from=*/0, /*to=*/kGrid, gen);
  map_.fill_(1.0);
  map_.view({episodes_, kSide, kSide}).narrow(1, kPad, kGrid).narrow(2, kPad, kGrid).zero_();
  const torch::Tensor cells =
      centres(positions_, stride_, origin_).unsqueeze(2).add(cover_offsets_);
  map_.view({-1}).index_fill_(/*dim=*/0, cells.view({-1}), 1.0);
  covered_ = map_.sum(/*dim=*/1).sub_(static_cast<double>(border_cells_));
}

torch::Tensor CoverageEnv::step(const torch::Tensor& actions) {
  agent_moves_ += actions.numel();  // a shape: no device sync
  positions_.add_(moves_.index_select(/*dim=*/0, actions.reshape({-1})).view_as(positions_))
      .clamp_(/*min=*/0, /*max=*/kGrid - 1);
  const torch::Tensor cells =
      centres(positions_, stride_, origin_).unsqueeze(2).add(cover_offsets_);
  map_.view({-1}).index_fill_(/*dim=*/0, cells.view({-1}), 1.0);
  torch::Tensor now = map_.sum(/*dim=*/1).sub_(static_cast<double>(border_cells_));
  torch::Tensor reward = now - covered_;
  covered_ = now;
  return reward;
}

void CoverageEnv::observe(const torch::Tensor& out) const {
  constexpr int64_t kPatchCells = kPatch * kPatch;
  const torch::Tensor cells =
      centres(positions_, stride_, origin_).unsqueeze(2).add(patch_offsets_);
  out.narrow(/*dim=*/2, /*start=*/0, kPatchCells).copy_(map_.take(cells));
  out.narrow(2, kPatchCells, 2).copy_(positions_).div_(static_cast<double>(kGrid - 1));
  out.narrow(2, kPatchCells + 2, agents_).copy_(agent_ids_);
}

void CoverageEnv::state(const torch::Tensor& out) const {
  out.narrow(/*dim=*/1, /*start=*/0, kCells)
      .view({episodes_, kGrid, kGrid})
      .copy_(map_.view({episodes_, kSide, kSide}).narrow(1, kPad, kGrid).narrow(2, kPad, kGrid));
  out.narrow(1, kCells, 2 * agents_)
      .view({episodes_, agents_, 2})
      .copy_(positions_)
      .div_(static_cast<double>(kGrid - 1));
}

}  // namespace gpusweep::marl
