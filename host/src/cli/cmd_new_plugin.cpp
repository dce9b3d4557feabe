// `gpusweep new-plugin NAME [--dir DIR]`: writes a minimal plugin project that
// builds against an installed gpusweep (CMakeLists.txt, one LibTorch source,
// a README, a sweep file) from sdk/template/, which the binary carries.
#include "cli/cli.hpp"
#include "cli/embedded.hpp"
#include "plugin_host/registry.hpp"
#include "plugin_host/scaffold.hpp"
#include "support/error.hpp"
#include "support/shell.hpp"
#include "support/spawn.hpp"
#include "support/version.hpp"

#include <gpusweep/plugin.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace gpusweep::host {

namespace fs = std::filesystem;

namespace {

// The prefix this gpusweep is installed in; none when it runs from a build tree.
std::optional<fs::path> install_prefix() {
  try {
    const fs::path prefix = fs::path(self_executable()).parent_path().parent_path();
    std::error_code ec;
    if (fs::exists(prefix / build::install_cmake_dir() / "gpusweepConfig.cmake", ec)) return prefix;
  } catch (const Error&) {
    // No /proc: give the generic hint.
  }
  return std::nullopt;
}

// `new-plugin --python`: a Python workload, run by the python plugin.
int new_python_workload(const std::string& name, const std::string& dir) {
  const std::vector<std::string> written =
      write_plugin_project(name, dir, python_templates(), {{"gpusweep_version", build::version()}});
  const std::string d = shell_word(dir);
  std::cout << "created Python workload '" << name << "' in " << dir << "/:\n";
  for (const auto& w : written) std::cout << "  " << w << "\n";
  std::cout << "\nnext:\n"
            << "  gpusweep plugins --check python --set module=" << d << "/" << name << ".py\n"
            << "  gpusweep run " << d << "/sweep.json\n"
            << "  gpusweep compare\n"
            << "\nguide: docs/writing-plugins.md, \"Python workloads\"\n";
  return 0;
}

int run_new_plugin(const po::variables_map& vm) {
  const std::string name = vm["name"].as<std::string>();
  validate_plugin_name(name);
  const std::string dir = vm.count("dir") != 0U ? vm["dir"].as<std::string>() : name;

  if (vm["python"].as<bool>()) return new_python_workload(name, dir);
  // A name already on the plugin path would shadow, or be shadowed by, that plugin.
  if (auto existing = Registry({}).find(name)) {
    throw UsageError("new-plugin: a plugin named '" + name + "' already exists (" + existing->path +
                     "); pick another name");
  }

  const std::vector<std::string> written = write_plugin_project(
      name, dir, plugin_templates(),
      {{"gpusweep_version", build::version()},
       {"abi", std::to_string(GPUSWEEP_ABI_MAJOR) + "." + std::to_string(GPUSWEEP_ABI_MINOR)}});

  const auto prefix = install_prefix();
  const std::string d = shell_word(dir);
  std::cout << "created plugin project '" << name << "' in " << dir << "/:\n";
  for (const auto& w : written) std::cout << "  " << w << "\n";
  std::cout << "\nnext:\n"
            << "  cmake -S " << d << " -B " << d << "/build -DCMAKE_PREFIX_PATH="
            << (prefix ? shell_word(prefix->string()) : "<where gpusweep is installed>") << "\n"
            << "  cmake --build " << d << "/build\n"
            << "  gpusweep plugins --check " << d << "/build/gpusweep_" << name << ".so\n"
            << "  gpusweep run " << d << "/sweep.json --plugin-path " << d << "/build\n"
            << "  cmake --install " << d << "/build    # then gpusweep finds it with no flags\n";
  if (prefix) {
    std::cout << "\nguide: " << (*prefix / build::install_doc_dir() / "writing-plugins.md").string()
              << "\n";
  } else {
    std::cout << "\nthis gpusweep runs from its build tree: install it first (cmake --install "
                 "BUILD --prefix PREFIX) and pass that PREFIX; guide: docs/writing-plugins.md\n";
  }
  return 0;
}

}  // namespace

CommandDef cmd_new_plugin() {
  return {"new-plugin",
          "write a new workload plugin project to start from",
          "Writes a minimal workload plugin project that builds against an installed gpusweep:\n"
          "CMakeLists.txt, NAME.cpp (a small LibTorch model with one knob, the common settings\n"
          "applied by torchkit), README.md and sweep.json. With --python, a Python workload\n"
          "instead: NAME.py over the Python SDK, a sweep.json and a README; nothing to build.",
          "writing-plugins.md",
          {text("name", "NAME", "the plugin's name").required(),
           text("dir", "DIR", "folder to create (default: ./NAME); it must not exist or be empty"),
           flag("python",
                "a workload in Python instead: NAME.py (MANIFEST and create(config) over the "
                "SDK's gpusweep.Settings), README.md and sweep.json, run by the python workload")},
          {"name"},
          {},
          run_new_plugin};
}

}  // namespace gpusweep::host
