// Two builds of one workload for `gpusweep check`: a path as the build it
// names (a plugin folder, a plugin file, a Python module), the refusals that
// need both, and what the run records of each.
#pragma once

#include "plugin_host/registry.hpp"
#include "spec/sweep.hpp"

#include <string>

namespace gpusweep::host {

// One build of a check: the plugin that runs the configs whose "build"
// names it, and the settings it adds to their workers' configs (a Python
// build's module: the bridge plugin is the same file for both builds).
struct RunBuild {
  PluginInfo info;
  Json selection = Json::object();
};

// The build `arg` names for the sweep's workload: a plugin folder (holding
// gpusweep_<workload>.so), a plugin file, or a Python module (.py) for a
// bridge workload. Throws UsageError naming `--<role> ARG` and the cause:
// no such path, no plugin of the workload there, an untrusted file, a build
// that does not load (with its error: an ABI it does not speak, say).
RunBuild resolve_build(const Registry& registry, const SweepSpec& spec, const std::string& role,
                       const std::string& arg);

// The workload a build runs: its plugin's name, and for a bridge (python)
// the selected module's own name too.
std::string workload_of(const RunBuild& b);

// Throws UsageError unless base and head are builds of the sweep's one
// workload, each with every setting the sweep names (the build that lacks
// one is named).
void check_build_pair(const SweepSpec& spec, const RunBuild& base, const RunBuild& head,
                      const std::string& base_arg, const std::string& head_arg);

// Both builds of a check, resolved: refuses the same file twice unless
// allow_same (an A/A check on purpose), then resolve_build each and
// check_build_pair. A Python check's sweep then names base's module.
struct BuildPair {
  RunBuild base;
  RunBuild head;
};
BuildPair resolve_build_pair(const Registry& registry, SweepSpec& spec, const std::string& base_arg,
                             const std::string& head_arg, bool allow_same);

// A build's label when none is given: its git commit (git_label), else
// the first 12 characters of its hash.
std::string default_build_label(const std::string& arg, const RunBuild& b);

// "3f2a9c1b7d00" or "3f2a9c1b7d00+dirty": the commit of the git work tree
// the build lies in; "" outside one, or without git.
std::string git_label(const std::string& path);

// What a check's stored sweep records of a build: label, path, hash,
// version, ABI (and for a Python build the module as path, the bridge as
// plugin).
CheckBuild build_record(const RunBuild& b, const std::string& label);

}  // namespace gpusweep::host
