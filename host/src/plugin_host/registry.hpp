// Finding plugins on the plugin path and reading their manifests. The host
// never loads a plugin itself (a LibTorch plugin would pull LibTorch into the
// host): a short-lived `gpusweep-worker --describe` process reports it.
#pragma once

#include "spec/manifest.hpp"
#include "spec/sweep.hpp"
#include "support/capture.hpp"
#include "support/error.hpp"

#include <gpusweep/runtime_info.hpp>

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
  Json runtime;              // as the plugin reported it (shown as it came)
  RuntimeInfo runtime_info;  // the same, read once into its fields
  std::string abi;
  std::string hash;  // of the .so file
};

// Why a plugin file or folder cannot be trusted, judged as ssh judges a key
// (StrictModes, with Debian's private-group rule): it is owned by someone
// other than root, the user running gpusweep and the owner of the gpusweep
// binary, or writable by everyone, or by a group with someone else in it, so
// that another user could put code there that gpusweep would run. Says the
// fix. Nothing when it can be trusted (or does not exist).
std::optional<std::string> trust_problem(const std::string& path);

class Registry {
 public:
  // extra_dirs (--plugin-path) come first, then GPUSWEEP_PLUGIN_PATH, then
  // the build's plugin folder (only for the binary in the build tree), then
  // the install folder of a binary in an installed prefix's bin/
  // (<prefix>/lib/gpusweep/plugins). A folder or plugin file that fails
  // trust_problem is skipped with a warning (and named when a workload is
  // not found).
  explicit Registry(std::vector<std::string> extra_dirs);

  const std::vector<std::string>& search_path() const { return dirs_; }
  // Every plugin file found; the first of a name along the path wins.
  std::vector<PluginFile> list() const;
  std::optional<PluginFile> find(const std::string& name) const;
  // Describes a plugin by name; throws UsageError for an unknown name (with
  // the known ones and a did-you-mean), Error when the plugin does not load.
  // With a selection (the selecting parameters of a bridge such as python's
  // `module`), the manifest is that of the workload it selects.
  PluginInfo describe(const std::string& name, const Json& selection = Json::object()) const;
  PluginInfo describe_file(const PluginFile& file, const Json& selection = Json::object()) const;
  // The sweep's workload. For a plugin with selecting parameters ("selects":
  // true) they must be set in the sweep's base, not as grid axes; a relative
  // file they name is made absolute from the sweep file's folder (in
  // spec.base, so that trials find it wherever they run); the manifest is
  // then the selected workload's. Throws UsageError naming the file and key.
  PluginInfo describe_sweep(SweepSpec& spec) const;
  // A plugin file given as a path (an existing file, or one that looks like
  // a path or a .so), else the file of the named plugin on the path; throws
  // the unknown-workload error with its did-you-mean.
  std::string file_for(const std::string& path_or_name) const;

 private:
  struct Scan {
    std::vector<PluginFile> found;
    std::vector<std::string> refused;  // each with its reason and fix
  };
  Scan scan() const;
  std::vector<std::string> dirs_;
};

}  // namespace gpusweep::host
