// Loading a plugin shared library with Boost.DLL and checking its ABI.
// Used only inside worker processes: a plugin that links LibTorch is never
// unloaded (dlclose of LibTorch users crashes at static destruction), so the
// library handle lives until the worker exits.
#pragma once

#include "support/error.hpp"

#include <gpusweep/plugin.h>

#include <cstddef>
#include <string>

namespace gpusweep::host {

// A plugin the loader refuses, named by its file.
class PluginLoadError : public PluginError {
 public:
  PluginLoadError(const std::string& path, const std::string& reason)
      : PluginError("refusing plugin '" + path + "': " + reason, reason) {}
};

struct LoadedPlugin {
  const gpusweep_plugin* table = nullptr;
  std::string path;
  std::string abi;  // "major.minor" the plugin was built for
  // The manifest of the trial's workload (workload_manifest), once announced.
  std::string manifest;
};

// Loads path and validates its entry table. Throws gpusweep::Error with a
// message naming the file and, for ABI mismatches, both versions.
LoadedPlugin load_plugin(const std::string& path);

// Checks a table against this host's ABI; empty when compatible, else why not.
std::string abi_problem(const gpusweep_plugin* table);

// The plugin's extension T named id (GPUSWEEP_EXT_*), or nullptr: a 1.0
// table (no get_extension), a plugin that does not offer it, or a struct
// smaller than this host's version of T.
template <class T>
const T* find_extension(const gpusweep_plugin* table, const char* id) {
  if (table->struct_size < offsetof(gpusweep_plugin, get_extension) + sizeof(void*) ||
      table->get_extension == nullptr) {
    return nullptr;
  }
  const T* ext = static_cast<const T*>(table->get_extension(id));
  return ext != nullptr && ext->struct_size >= sizeof(T) ? ext : nullptr;
}

// The manifest (JSON text) of the workload config_json selects: through
// GPUSWEEP_EXT_SELECTED_MANIFEST when the plugin has it and the config sets
// a parameter its own manifest marks "selects"; else the plugin's own.
// Throws PluginError with the plugin's message when the selection fails
// (a Python module that does not import).
std::string workload_manifest(const LoadedPlugin& plugin, const std::string& config_json);

}  // namespace gpusweep::host
