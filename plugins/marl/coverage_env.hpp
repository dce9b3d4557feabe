// Multi-agent grid coverage (docs/workloads.md "marl") for many episodes at once:
// every episode's coverage map and every agent's position are rows of device
// tensors, so one step of all episodes is a handful of tensor ops.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace gpusweep::marl {

class CoverageEnv {
 public:
  static constexpr int64_t kGrid = 16;  // the grid is kGrid x kGrid cells
  static constexpr int64_t kCells = kGrid * kGrid;
  static constexpr int64_t kNumActions = 5;  // stay, N, S, E, W
  static constexpr int64_t kPatch = 5;       // the actor sees a kPatch x kPatch window
  static constexpr int64_t kCover = 3;       // an agent covers its kCover x kCover neighbourhood

  // Actor observation width: local patch, own position (2), agent one-hot.
  static int64_t obs_dim(int64_t agents) { return kPatch * kPatch + 2 + agents; }
  // Critic state width shared by all agents of a transition: coverage map and
  // every agent's position.
  static int64_t state_dim(int64_t agents) { return kCells + 2 * agents; }

  CoverageEnv(int64_t episodes, int64_t agents, const torch::Device& device);

  // New episodes: every agent at a uniformly random cell (drawn from `gen`),
  // their neighbourhoods already covered.
  void reset(torch::Generator& gen);

  // Moves every agent ([E, A] int64 actions, clamped at the walls), covers
  // their neighbourhoods and returns the team reward: cells newly covered in
  // each episode, [E] float.
  torch::Tensor step(const torch::Tensor& actions);

  // Writes the actor observations, [E, A, obs_dim] float, into `out`.
  void observe(const torch::Tensor& out) const;
  // Writes the critic's shared state, [E, state_dim] float, into `out`.
  void state(const torch::Tensor& out) const;

  // Covered cells per episode, [E] float.
  const torch::Tensor& covered() const { return covered_; }

  int64_t episodes() const { return episodes_; }
  // Agent moves made so far (one per agent per episode per step()).
  int64_t agent_moves() const { return agent_moves_; }
  int64_t agents() const { return agents_; }

 private:
  static constexpr int64_t kPad = kPatch / 2;         // border wide enough for any patch
  static constexpr int64_t kSide = kGrid + 2 * kPad;  // padded map side

  int64_t episodes_;
  int64_t agents_;
  int64_t agent_moves_ = 0;
  // [E, kSide * kSide] float, 1 = covered. The border is always 1: patches
  // that reach past a wall see nothing left to gain there, and covering a
  // border cell changes no count.
  torch::Tensor map_;
  torch::Tensor positions_;      // [E, A, 2] int64 row, column in 0..kGrid-1
  torch::Tensor covered_;        // [E] float covered cells (border excluded)
  torch::Tensor moves_;          // [kNumActions, 2] int64 row and column deltas
  torch::Tensor stride_;         // [2] int64 (kSide, 1): row, column -> flat offset
  torch::Tensor origin_;         // [E, 1, 1] int64 flat index of each episode's first interior cell
  torch::Tensor patch_offsets_;  // [kPatch^2] int64 flat offsets around a centre
  torch::Tensor cover_offsets_;  // [kCover^2] int64
  torch::Tensor agent_ids_;      // [E, A, A] float one-hot, expanded (no copy)
  int64_t border_cells_;
};

}  // namespace gpusweep::marl
