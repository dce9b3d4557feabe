// The transformer's own checkpoints: model, optimiser state, step count and
// the random generators' states in one torch::serialize archive, so that a
// resumed run continues exactly where the saved one stopped.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::transformer {

// What a checkpoint must match to be resumed: (name, value) pairs such as
// the model shape and the data seed. A mismatch is refused with both values.
using Fingerprint = std::vector<std::pair<std::string, int64_t>>;

struct TrainingState {
  torch::nn::Module& model;
  torch::optim::Optimizer& optimizer;
  torch::Generator& data_generator;  // the stream of training windows
  int64_t& step;                     // optimiser steps taken so far
};

// Writes to `path` through a temporary file and a rename, so that a crash
// while saving leaves the previous checkpoint intact.
void save_checkpoint(const std::string& path, const TrainingState& state,
                     const Fingerprint& fingerprint);

// Restores everything save_checkpoint wrote, including torch's default CPU
// generator. Throws std::invalid_argument when the file is missing or was
// written for another configuration.
void load_checkpoint(const std::string& path, const TrainingState& state,
                     const Fingerprint& fingerprint, const torch::Device& device);

}  // namespace gpusweep::transformer
