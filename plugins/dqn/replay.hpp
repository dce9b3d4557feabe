// The two replay buffers behind dqn's replay_on_device knob: a host-side ring
// of std::vector<float> whose batches are assembled per sample and copied to
// the device, and a ring of preallocated device tensors sampled by gathering.
#pragma once

#include <gpusweep/torchkit/diagnostics.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

namespace gpusweep::dqn {

// One sampled minibatch, on the training device.
struct Batch {
  torch::Tensor obs;             // [B, obs_dim] float
  torch::Tensor action;          // [B] int64
  torch::Tensor reward;          // [B] float
  torch::Tensor next_obs;        // [B, obs_dim] float
  torch::Tensor not_terminated;  // [B] float: 0 where the episode truly ended
};

// Host ring buffer, as a typical eager implementation keeps it.
class HostReplay {
 public:
  HostReplay(int64_t capacity, int64_t obs_dim, int64_t batch_size, torch::Device device);

  void add(const float* obs, int64_t action, float reward, const float* next_obs, bool terminated);

  // Draws batch_size indices uniformly with replacement, copies each sample
  // into host staging vectors, then moves each field to the device. On a CPU
  // device the tensors alias the staging memory (as torch.as_tensor would):
  // they are valid until the next sample().
  // The copies are timed by `transfers` (CUDA events: the transfer_time
  // metric), the host's sampling is not.
  Batch sample(std::mt19937_64& rng, torchkit::TransferTimes& transfers);

  int64_t size() const { return size_; }

 private:
  int64_t capacity_;
  int64_t obs_dim_;
  int64_t batch_size_;
  torch::Device device_;
  int64_t next_ = 0;
  int64_t size_ = 0;
  std::vector<float> obs_, reward_, next_obs_, not_terminated_;
  std::vector<int64_t> action_;
  // Staging for one batch, reused so sampling allocates nothing on the host.
  std::vector<float> batch_obs_, batch_reward_, batch_next_obs_, batch_not_terminated_;
  std::vector<int64_t> batch_action_;
};

// Device-resident ring buffer: written with slice copies, sampled with one
// randint and one index_select per field, never touching the host.
class DeviceReplay {
 public:
  DeviceReplay(int64_t capacity, int64_t obs_dim, const torch::Device& device);

  // Appends one transition per row (rows <= capacity): obs and next_obs
  // [N, obs_dim] float, action [N] int64, reward [N] float, terminated [N] bool.
  void add(const torch::Tensor& obs, const torch::Tensor& action, const torch::Tensor& reward,
           const torch::Tensor& next_obs, const torch::Tensor& terminated);

  Batch sample(int64_t batch_size, torch::Generator& gen);

  int64_t size() const { return size_; }

 private:
  // Copies rows [from, from + count) of the inputs to rows [at, at + count).
  void write(int64_t from, int64_t count, int64_t at, const torch::Tensor& obs,
             const torch::Tensor& action, const torch::Tensor& reward,
             const torch::Tensor& next_obs, const torch::Tensor& not_terminated);

  int64_t capacity_;
  int64_t next_ = 0;
  int64_t size_ = 0;
  torch::Tensor obs_, action_, reward_, next_obs_, not_terminated_;
};

}  // namespace gpusweep::dqn
