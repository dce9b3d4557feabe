// Which device a trial ran on, from its resolved config and the runtime its
// worker reported after create(): the one answer the monitor (which GPU to
// sample) and diagnose (which settings to suggest) both need.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gpusweep::host {

struct TrialDevice {
  bool cuda = false;  // the trial ran on a CUDA device
  // That device's entry in the runtime's "devices" list (name, pci_bus_id,
  // compute_capability, ...), in the trial's own numbering; an empty object
  // when the plugin did not report it.
  nlohmann::json info = nlohmann::json::object();
};

// A config's device setting: its "device", or "auto" when it names none.
std::string device_setting(const nlohmann::json& config);

// Whether a trial with this device setting runs on a GPU where `gpus` GPUs
// are visible: cuda or cuda:N, or auto with a GPU.
bool on_gpu(const std::string& device, unsigned gpus);

// cuda:N -> devices[N]; cuda, or auto (or no device setting) with CUDA
// available -> devices[0]; cpu, or auto without CUDA -> a CPU trial.
TrialDevice trial_device(const nlohmann::json& config, const nlohmann::json& runtime);

// The device's compute capability as a number (8.6), or 0 when unknown.
double compute_capability(const TrialDevice& device);

}  // namespace gpusweep::host
