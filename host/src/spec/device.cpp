// A trial's device; see device.hpp.
#include "spec/device.hpp"

#include <gpusweep/runtime_info.hpp>
#include <string>

namespace gpusweep::host {

std::string device_setting(const nlohmann::json& config) {
  return config.is_object() && config.contains("device") && config["device"].is_string()
             ? config["device"].get<std::string>()
             : "auto";
}

bool on_gpu(const std::string& device, unsigned gpus) {
  return device.rfind("cuda", 0) == 0 || (device == "auto" && gpus > 0);
}

TrialDevice trial_device(const nlohmann::json& config, const nlohmann::json& runtime) {
  const std::string device = device_setting(config);
  const auto info = RuntimeInfo::from_json(runtime);
  const bool cuda_available = info.cuda_available.value_or(false);
  TrialDevice d;
  size_t index = 0;
  if (device.rfind("cuda:", 0) == 0) {
    try {
      index = std::stoul(device.substr(5));
    } catch (const std::exception&) {
      return d;
    }
    d.cuda = true;
  } else {
    d.cuda = device == "cuda" || (device == "auto" && cuda_available);
  }
  if (!d.cuda || !info.devices) return d;
  const auto& devices = *info.devices;
  if (devices.is_array() && index < devices.size() && devices[index].is_object()) {
    d.info = devices[index];
  }
  return d;
}

double compute_capability(const TrialDevice& device) {
  const auto it = device.info.find("compute_capability");
  if (it == device.info.end() || !it->is_string()) return 0;
  try {
    return std::stod(it->get<std::string>());
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace gpusweep::host
