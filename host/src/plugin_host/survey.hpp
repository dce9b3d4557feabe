// What `gpusweep doctor` asks of the plugins: which load, and what a LibTorch
// plugin's worker maps and measures (the probe).
#pragma once

#include "plugin_host/registry.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

struct PluginSurvey {
  // {name, file, loads, version, unit, description, abi, torch_version | error}
  Json rows = Json::array();
  std::vector<PluginInfo> loaded;
  std::vector<std::string> problems;  // plugins that do not load; none found
  std::string search_path;            // the folders searched, ':'-separated
};

// Describes every plugin on the registry's path.
PluginSurvey survey_plugins(const Registry& registry);

// The first loaded plugin that runs on LibTorch, or nullptr.
const PluginInfo* libtorch_plugin(const PluginSurvey& survey);

// The probe worker's report ({libraries, matmul}) for a LibTorch plugin, or
// null with why set (what the worker said, or how it ended).
// visible: the CUDA_VISIBLE_DEVICES the worker gets (a run's first GPU).
Json probe_libtorch(const PluginFile& file, double matmul_s, std::string* why,
                    const std::optional<std::string>& visible = std::nullopt);

// The Python a loaded Python plugin embeds (its runtime's
// python_interpreter, which GPUSWEEP_PYTHON picks), or "" when none loads.
std::string embedded_python(const PluginSurvey& survey);

// What that interpreter has, run as a process of its own (nothing is
// embedded): {executable, version, torch: {version, cuda, lib} or
// torch_error, packages: {transformers, lightning, accelerate ...}}; null
// with why set when it does not run.
Json probe_python(const std::string& interpreter, std::string* why);

}  // namespace gpusweep::host
