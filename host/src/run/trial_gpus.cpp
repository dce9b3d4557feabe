// What the TurnScheduler needs to know of a queued trial: its round, its
// config and, under run --gpus, how many GPUs it takes.
#include "run/supervisor.hpp"

#include "spec/gpus.hpp"

#include <cstddef>
#include <string>

namespace gpusweep::host::detail {

QueuedTrial Supervisor::queued(const TrialJob& job) const {
  QueuedTrial t;
  t.round = job.round;
  t.config = job.config;
  if (gpus_listed_ > 0) t.gpus = gpus_needed(job);
  return t;
}

// The GPUs a trial takes: one per rank (world_size), or fewer for Gloo's
// ranks, which may share (gpus_for_trial).
size_t Supervisor::gpus_needed(const TrialJob& job) const {
  try {
    const Json config = Json::parse(job.worker.config_json);
    if (config.value("device", std::string("auto")) == "cpu") return 1;  // ranks on CPUs
    return static_cast<size_t>(gpus_for_trial(config, gpus_listed_));
  } catch (const Json::exception&) {
    return 1;
  }
}

}  // namespace gpusweep::host::detail
