// Finding plugins on the plugin path and reading their manifests. The host
// never loads a plugin itself (a LibTorch plugin would pull LibTorch into the
// host): a short-lived `gpusweep-worker --describe` process reports it.
#pragma once

#include "model/manifest.hpp"
#include "support/capture.hpp"
#include "support/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct PluginFile {
  std::string name;  // workload name from the file name: gpusweep_<name>.so
  std::string path;
};

struct PluginInfo {
  PluginFile file;
  PluginManifest manifest;
  Json runtime;
  std::string abi;
  std::string hash;  // of the .so file
};

class Registry {
 public:
  // extra_dirs (--plugin-path) come first, then GPUSWEEP_PLUGIN_PATH, then
  // the build's plugin folder (only for the binary in the build tree), then
  // the install folder next to the binary (<prefix>/lib/gpusweep/plugins).
  explicit Registry(std::vector<std::string> extra_dirs);

  const std::vector<std::string>& search_path() const { return dirs_; }
  // Every plugin file found; the first of a name along the path wins.
  std::vector<PluginFile> list() const;
  std::optional<PluginFile> find(const std::string& name) const;
  // Describes a plugin by name; throws UsageError for an unknown name (with
  // the known ones and a did-you-mean), Error when the plugin does not load.
  PluginInfo describe(const std::string& name) const;
  PluginInfo describe_file(const PluginFile& file) const;
  // A plugin file given as a path (an existing file, or one that looks like
  // a path or a .so), else the file of the named plugin on the path; throws
  // the unknown-workload error with its did-you-mean.
  std::string file_for(const std::string& path_or_name) const;

 private:
  std::vector<std::string> dirs_;
};

}  // namespace gpusweep::host
