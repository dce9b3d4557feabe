// Saving and resuming the transformer's training state; see checkpoint.hpp.
#include "checkpoint.hpp"

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace gpusweep::transformer {
namespace {

torch::Tensor generator_state(torch::Generator& gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_generator_state(torch::Generator& gen, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(torch::kCPU).contiguous());
}

torch::Tensor fingerprint_values(const Fingerprint& fingerprint) {
  std::vector<int64_t> values;
  for (const auto& entry : fingerprint) values.push_back(entry.second);
  return torch::tensor(values, torch::kLong);
}

}  // namespace

void save_checkpoint(const std::string& path, const TrainingState& state,
                     const Fingerprint& fingerprint) {
  torch::serialize::OutputArchive root;
  torch::serialize::OutputArchive model;
  state.model.save(model);
  root.write("model", model);
  torch::serialize::OutputArchive optimizer;
  state.optimizer.save(optimizer);
  root.write("optimizer", optimizer);
  root.write("step", torch::tensor(state.step, torch::kLong));
  root.write("fingerprint", fingerprint_values(fingerprint));
  root.write("data_rng", generator_state(state.data_generator));
  torch::Generator cpu = at::globalContext().defaultGenerator(torch::kCPU);
  root.write("torch_rng", generator_state(cpu));

  const std::string tmp = path + ".tmp";
  root.save_to(tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    throw std::runtime_error("cannot move checkpoint " + tmp + " to " + path + ": " + ec.message());
}

void load_checkpoint(const std::string& path, const TrainingState& state,
                     const Fingerprint& fingerprint, const torch::Device& device) {
  if (!std::filesystem::exists(path)) {
    throw std::invalid_argument("resume=true but checkpoint_path '" + path +
                                "' does not exist (save one first with checkpoint_every)");
  }
  torch::serialize::InputArchive root;
  root.load_from(path, device);

  torch::Tensor saved;
  root.read("fingerprint", saved);
  saved = saved.to(torch::kCPU);
  if (saved.numel() != static_cast<int64_t>(fingerprint.size())) {
    throw std::invalid_argument("checkpoint '" + path + "' was written by another version");
  }
  for (size_t i = 0; i < fingerprint.size(); ++i) {
    const int64_t was = saved[static_cast<int64_t>(i)].item<int64_t>();
    if (was != fingerprint[i].second) {
      throw std::invalid_argument("checkpoint '" + path + "' was saved with " +
                                  fingerprint[i].first + "=" + std::to_string(was) +
                                  ", this trial has " + std::to_string(fingerprint[i].second));
    }
  }

  torch::serialize::InputArchive model;
  root.read("model", model);
  state.model.load(model);
  torch::serialize::InputArchive optimizer;
  root.read("optimizer", optimizer);
  state.optimizer.load(optimizer);
  torch::Tensor step;
  root.read("step", step);
  state.step = step.item<int64_t>();
  torch::Tensor data_rng;
  root.read("data_rng", data_rng);
  set_generator_state(state.data_generator, data_rng);
  torch::Tensor torch_rng;
  root.read("torch_rng", torch_rng);
  torch::Generator cpu = at::globalContext().defaultGenerator(torch::kCPU);
  set_generator_state(cpu, torch_rng);
}

}  // namespace gpusweep::transformer
