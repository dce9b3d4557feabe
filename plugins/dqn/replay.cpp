// Host and device replay buffers; see replay.hpp.
#include "replay.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace gpusweep::dqn {

HostReplay::HostReplay(int64_t capacity, int64_t obs_dim, int64_t batch_size, torch::Device device)
    : capacity_(capacity), obs_dim_(obs_dim), batch_size_(batch_size), device_(device) {
  if (capacity <= 0 || obs_dim <= 0 || batch_size <= 0) {
    throw std::invalid_argument("replay buffer sizes must be positive");
  }
  obs_.resize(capacity * obs_dim);
  next_obs_.resize(capacity * obs_dim);
  reward_.resize(capacity);
  not_terminated_.resize(capacity);
  action_.resize(capacity);
  batch_obs_.resize(batch_size * obs_dim);
  batch_next_obs_.resize(batch_size * obs_dim);
  batch_reward_.resize(batch_size);
  batch_not_terminated_.resize(batch_size);
  batch_action_.resize(batch_size);
}

void HostReplay::add(const float* obs, int64_t action, float reward, const float* next_obs,
                     bool terminated) {
  std::copy_n(obs, obs_dim_, obs_.begin() + next_ * obs_dim_);
  std::copy_n(next_obs, obs_dim_, next_obs_.begin() + next_ * obs_dim_);
  action_[next_] = action;
  reward_[next_] = reward;
  not_terminated_[next_] = terminated ? 0.0f : 1.0f;
  next_ = (next_ + 1) % capacity_;
  size_ = std::min(size_ + 1, capacity_);
}

Batch HostReplay::sample(std::mt19937_64& rng, torchkit::TransferTimes& transfers) {
  if (size_ == 0) throw std::logic_error("sampling an empty replay buffer");
  for (int64_t b = 0; b < batch_size_; ++b) {
    const int64_t i = random::uniform_int(rng, 0, size_ - 1);
    std::copy_n(obs_.begin() + i * obs_dim_, obs_dim_, batch_obs_.begin() + b * obs_dim_);
    std::copy_n(next_obs_.begin() + i * obs_dim_, obs_dim_, batch_next_obs_.begin() + b * obs_dim_);
    batch_action_[b] = action_[i];
    batch_reward_[b] = reward_[i];
    batch_not_terminated_[b] = not_terminated_[i];
  }
  // One host-to-device copy per field, as torch.as_tensor(x, device=...) does.
  const std::array<int64_t, 2> rows{batch_size_, obs_dim_};
  const std::array<int64_t, 1> flat{batch_size_};
  return transfers.time([&]() -> Batch {
    return {torch::from_blob(batch_obs_.data(), rows, torch::kFloat).to(device_),
            torch::from_blob(batch_action_.data(), flat, torch::kLong).to(device_),
            torch::from_blob(batch_reward_.data(), flat, torch::kFloat).to(device_),
            torch::from_blob(batch_next_obs_.data(), rows, torch::kFloat).to(device_),
            torch::from_blob(batch_not_terminated_.data(), flat, torch::kFloat).to(device_)};
  });
}

DeviceReplay::DeviceReplay(int64_t capacity, int64_t obs_dim, const torch::Device& device)
    : capacity_(capacity) {
  if (capacity <= 0 || obs_dim <= 0) {
    throw std::invalid_argument("replay buffer sizes must be positive");
  }
  const auto floats = torch::TensorOptions().dtype(torch::kFloat).device(device);
  // Zeroed rather than empty: the whole buffer is touched once at setup, so
  // its memory shows up in the peak from the start.
  obs_ = torch::zeros({capacity, obs_dim}, floats);
  next_obs_ = torch::zeros({capacity, obs_dim}, floats);
  reward_ = torch::zeros({capacity}, floats);
  not_terminated_ = torch::zeros({capacity}, floats);
  action_ = torch::zeros({capacity}, floats.dtype(torch::kLong));
}

void DeviceReplay::write(int64_t from, int64_t count, int64_t at, const torch::Tensor& obs,
                         const torch::Tensor& action, const torch::Tensor& reward,
                         const torch::Tensor& next_obs, const torch::Tensor& not_terminated) {
  obs_.narrow(0, at, count).copy_(obs.narrow(0, from, count));
  action_.narrow(0, at, count).copy_(action.narrow(0, from, count));
  reward_.narrow(0, at, count).copy_(reward.narrow(0, from, count));
  next_obs_.narrow(0, at, count).copy_(next_obs.narrow(0, from, count));
  // copy_ converts bool to float; the flag is stored inverted so the target
  // is one addcmul.
  not_terminated_.narrow(0, at, count).copy_(not_terminated.narrow(0, from, count));
}

void DeviceReplay::add(const torch::Tensor& obs, const torch::Tensor& action,
                       const torch::Tensor& reward, const torch::Tensor& next_obs,
                       const torch::Tensor& terminated) {
  const int64_t rows = obs.size(0);
  if (rows > capacity_) throw std::invalid_argument("more rows than the replay capacity");
  const torch::Tensor not_terminated = terminated.logical_not();
  // The ring index lives on the host, so writes need no device index tensor
  // and no sync; a write that wraps is split in two slices.
  const int64_t first = std::min(rows, capacity_ - next_);
  write(/*from=*/0, first, /*at=*/next_, obs, action, reward, next_obs, not_terminated);
  if (first < rows) {
    write(/*from=*/first, rows - first, /*at=*/0, obs, action, reward, next_obs, not_terminated);
  }
  next_ = (next_ + rows) % capacity_;
  size_ = std::min(size_ + rows, capacity_);
}

Batch DeviceReplay::sample(int64_t batch_size, torch::Generator& gen) {
  if (size_ == 0) throw std::logic_error("sampling an empty replay buffer");
  const torch::Tensor idx =
      torch::randint(/*low=*/0, /*high=*/size_, {batch_size}, gen,
                     torch::TensorOptions().dtype(torch::kLong).device(obs_.device()));
  return {obs_.index_select(0, idx), action_.index_select(0, idx), reward_.index_select(0, idx),
          next_obs_.index_select(0, idx), not_terminated_.index_select(0, idx)};
}

}  // namespace gpusweep::dqn
