// Two builds of one workload for a check; see builds.hpp.
#include "plugin_host/builds.hpp"

#include "support/capture.hpp"
#include "support/error.hpp"

#include <filesystem>
#include <tuple>

namespace gpusweep::host {

namespace fs = std::filesystem;

namespace {

// A plugin folder's or file's plugin for the sweep's workload.
PluginFile plugin_file(const std::string& option, const std::string& arg,
                       const std::string& workload) {
  std::error_code ec;
  const fs::path path = fs::absolute(arg).lexically_normal();
  if (!fs::exists(path, ec)) throw UsageError(option + ": no such file or folder");
  const std::string want = "gpusweep_" + workload + ".so";
  if (fs::is_directory(path, ec)) {
    if (fs::exists(path / want, ec)) return {workload, (path / want).string()};
    std::string found;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("gpusweep_", 0) == 0 && e.path().extension() == ".so") {
        found += (found.empty() ? "" : ", ") + n;
      }
    }
    throw UsageError(option + ": the folder holds no " + want + " (the sweep's workload is '" +
                     workload + "'; plugins there: " + (found.empty() ? "none" : found) + ")");
  }
  const std::string file = path.filename().string();
  if (file.rfind("gpusweep_", 0) != 0 || path.extension() != ".so") {
    throw UsageError(option + ": give a plugin folder, a plugin file gpusweep_NAME.so, or a " +
                     "Python workload's module (.py)");
  }
  return {file.substr(9, file.size() - 12), path.string()};
}

}  // namespace

// The bridge puts the module's own name first in its description.
std::string workload_of(const RunBuild& b) {
  std::string name = b.info.manifest.name;
  if (!b.selection.empty()) {
    const std::string& d = b.info.manifest.description;
    name += "/" + d.substr(0, d.find(':'));
  }
  return name;
}

RunBuild resolve_build(const Registry& registry, const SweepSpec& spec, const std::string& role,
                       const std::string& arg) {
  const std::string option = "--" + role + " " + arg;
  RunBuild b;
  if (fs::path(arg).extension() == ".py") {
    const PluginInfo bridge = registry.describe(spec.workload);
    const ParamSpec* selects = nullptr;
    // The parameter that names the selected file: the required one.
    for (const auto& p : bridge.manifest.params) {
      if (names_selected_file(p) && selects == nullptr) selects = &p;
    }
    if (selects == nullptr) {
      throw UsageError(option + ": a Python file, but the sweep's workload '" + spec.workload +
                       "' is a plugin: give the plugin's folder or .so, or a sweep of the " +
                       "python or script workload");
    }
    if (!fs::is_regular_file(arg)) throw UsageError(option + ": no such file");
    const std::string module = fs::absolute(arg).lexically_normal().string();
    SweepSpec selected = spec;
    selected.base[selects->name] = module;
    try {
      b.info = registry.describe_sweep(selected);
    } catch (const Error& e) {
      throw UsageError(option + " does not load: " + e.what());
    }
    b.selection[selects->name] = module;
    return b;
  }
  const PluginFile file = plugin_file(option, arg, spec.workload);
  if (auto problem = trust_problem(file.path)) throw UsageError(option + ": " + *problem);
  try {
    b.info = registry.describe_file(file);
  } catch (const PluginError& e) {
    throw UsageError(option + " does not load: " + e.reason());
  } catch (const Error& e) {
    throw UsageError(option + ": " + e.what());
  }
  return b;
}

std::string git_label(const std::string& path) {
  const std::string git = find_on_path("git");
  if (git.empty()) return "";
  std::error_code ec;
  const fs::path p = fs::absolute(path);
  const std::string dir = (fs::is_directory(p, ec) ? p : p.parent_path()).string();
  CaptureLimits limits;
  limits.timeout_s = 10;
  const Captured head = capture(git, {"-C", dir, "rev-parse", "--short=12", "HEAD"}, limits);
  if (head.exit_code() != 0) return "";
  std::string label = head.out.substr(0, head.out.find('\n'));
  const Captured st =
      capture(git, {"-C", dir, "status", "--porcelain", "--untracked-files=no"}, limits);
  if (st.exit_code() == 0 && !st.out.empty()) label += "+dirty";
  return label;
}

CheckBuild build_record(const RunBuild& b, const std::string& label) {
  CheckBuild r{label, b.info.file.path, b.info.hash, b.info.manifest.version, b.info.abi, ""};
  for (const auto& [key, value] : b.selection.items()) {
    r.path = value.get<std::string>();
    r.plugin = b.info.file.path;
  }
  return r;
}

void check_build_pair(const SweepSpec& spec, const RunBuild& base, const RunBuild& head,
                      const std::string& base_arg, const std::string& head_arg) {
  if (workload_of(base) != workload_of(head)) {
    throw UsageError("--base " + base_arg + " is workload '" + workload_of(base) + "' and --head " +
                     head_arg + " is '" + workload_of(head) +
                     "': a check compares two builds of one workload");
  }
  if (base.info.manifest.name != spec.workload) {
    throw UsageError("the builds are workload '" + base.info.manifest.name + "', the sweep (" +
                     spec.source + ") is of '" + spec.workload + "'");
  }
  for (const auto& [role, arg, b] :
       {std::tuple{"base", base_arg, &base}, std::tuple{"head", head_arg, &head}}) {
    try {
      validate_sweep(spec, b->info.manifest);
    } catch (const UsageError& e) {
      throw UsageError(std::string("the ") + role + " build (" + arg +
                       ") cannot run the sweep: " + e.what());
    }
  }
}

BuildPair resolve_build_pair(const Registry& registry, SweepSpec& spec, const std::string& base_arg,
                             const std::string& head_arg, bool allow_same) {
  std::error_code ec;
  if (!allow_same && fs::exists(base_arg, ec) && fs::equivalent(base_arg, head_arg, ec)) {
    throw UsageError("--base and --head are the same file (" + base_arg +
                     "): pass --allow-same for an A/A check of one build against itself");
  }
  BuildPair pair{resolve_build(registry, spec, kBaseBuild, base_arg),
                 resolve_build(registry, spec, kHeadBuild, head_arg)};
  for (const auto& [key, value] : pair.base.selection.items()) spec.base[key] = value;
  check_build_pair(spec, pair.base, pair.head, base_arg, head_arg);
  return pair;
}

std::string default_build_label(const std::string& arg, const RunBuild& b) {
  const std::string git = git_label(arg);
  return git.empty() ? b.info.hash.substr(0, 12) : git;
}

}  // namespace gpusweep::host
