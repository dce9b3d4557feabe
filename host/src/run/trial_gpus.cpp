// A trial's GPUs under run --gpus: how many it takes, whether they are free,
// taken from the run's pool when it starts and given back when it ends.
#include "run/supervisor.hpp"

#include "model/gpus.hpp"

#include <cstddef>
#include <sstream>
#include <string>

namespace gpusweep::host::detail {

// The GPUs a trial takes: one per rank (world_size), or fewer for Gloo's
// ranks, which may share (gpus_for_trial).
size_t Supervisor::gpus_needed(const TrialJob& job) const {
  try {
    const Json config = Json::parse(job.worker.config_json);
    if (config.value("device", std::string("auto")) == "cpu") return 1;  // ranks on CPUs
    return static_cast<size_t>(gpus_for_trial(config, gpus_.gpus.size()));
  } catch (const Json::exception&) {
    return 1;
  }
}
// Whether the next trial's GPUs are free (always, without --gpus or when
// the interleaved trials share theirs).
bool Supervisor::gpus_free_for(const TrialJob& job) const {
  return gpus_.gpus.empty() || gpus_.shared || gpus_needed(job) <= free_gpus_.size() ||
         running_.empty();
}
// The trial's GPUs (run --gpus): free ones of the run's, or the ones the
// interleaved trials share, one per rank, as one CUDA_VISIBLE_DEVICES
// list; back to the pool when the trial ends.
void Supervisor::take_gpu(TrialJob& job) {
  if (gpus_.gpus.empty()) return;
  const size_t n = gpus_needed(job);
  job.pooled_gpus = !gpus_.shared && free_gpus_.size() >= n;
  std::string list;
  for (size_t i = 0; i < n && i < gpus_.gpus.size(); ++i) {
    std::string gpu = gpus_.gpus[i];
    if (job.pooled_gpus) {
      gpu = free_gpus_.front();
      free_gpus_.pop_front();
    }
    list += (i > 0 ? "," : "") + gpu;
  }
  job.worker.visible_devices = list;
}
void Supervisor::return_gpu(const TrialJob& job) {
  if (!job.pooled_gpus || !job.worker.visible_devices) return;
  std::stringstream in(*job.worker.visible_devices);
  for (std::string gpu; std::getline(in, gpu, ',');) free_gpus_.push_back(gpu);
}

}  // namespace gpusweep::host::detail
