// `gpusweep new-plugin NAME [--dir DIR]`: writes a minimal plugin project that
// builds against an installed gpusweep (CMakeLists.txt, one LibTorch source,
// a README, a sweep file) from sdk/template/, which the binary carries.
#include "cli/cli.hpp"
#include "cli/embedded.hpp"
#include "plugins/registry.hpp"
#include "support/error.hpp"
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

constexpr size_t kMaxNameLength = 48;

// "My-Model 2" -> "my_model_2": what the user probably meant.
std::string suggest_name(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0) {
      out.push_back(static_cast<char>(std::tolower(c)));
    } else if (!out.empty() && out.back() != '_') {
      out.push_back('_');
    }
  }
  while (!out.empty() && std::isalpha(static_cast<unsigned char>(out.front())) == 0) {
    out.erase(0, 1);
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.substr(0, kMaxNameLength);
}

// "my_model" -> "MyModel", the workload's class name.
std::string class_name(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out.push_back(upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c);
    upper = false;
  }
  return out;
}

void validate_name(const std::string& name) {
  static const std::regex pattern("[a-z][a-z0-9_]*");
  if (std::regex_match(name, pattern) && name.size() <= kMaxNameLength) {
    // The template's class (`using namespace gpusweep`) must not hide an SDK type.
    static const std::set<std::string> taken = {"Json",        "Manifest", "Metrics", "OutOfMemory",
                                                "Param",       "Quality",  "Skipped", "StepResult",
                                                "TrialConfig", "Workload"};
    if (taken.count(class_name(name)) == 0) return;
    throw UsageError("new-plugin: the name '" + name + "' would make the class " +
                     class_name(name) +
                     ", which the SDK already defines; choose another name "
                     "(for example '" +
                     name + "_model')");
  }
  const std::string suggestion = suggest_name(name);
  throw UsageError(
      "new-plugin: invalid plugin name '" + name +
      "': use lower-case letters, digits and "
      "underscores, starting with a letter, at most " +
      std::to_string(kMaxNameLength) +
      " characters (it names the workload in sweep files, the file gpusweep_<name>.so and the "
      "C++ class)" +
      (suggestion.empty() ? "" : "; for example '" + suggestion + "'"));
}

// Replaces each {{key}} of vars; anything else (C++'s `{{"a", 1}}`) stays.
std::string substitute(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [key, value] : vars) {
    const std::string mark = "{{" + key + "}}";
    for (size_t at = text.find(mark); at != std::string::npos;
         at = text.find(mark, at + value.size())) {
      text.replace(at, mark.size(), value);
    }
  }
  return text;
}

// "plugin.cpp.in" -> "<name>.cpp"; "README.md.in" -> "README.md".
std::string output_name(std::string template_name, const std::string& name) {
  if (template_name.size() > 3 && template_name.compare(template_name.size() - 3, 3, ".in") == 0) {
    template_name.resize(template_name.size() - 3);
  }
  return template_name == "plugin.cpp" ? name + ".cpp" : template_name;
}

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

std::string quoted(const std::string& path) {
  return path.find_first_of(" '\"$\\") == std::string::npos ? path : "'" + path + "'";
}

}  // namespace

int cmd_new_plugin(const Args& args) {
  po::options_description o;
  o.add_options()("name", po::value<std::string>()->required(), "the plugin's name")(
      "dir", po::value<std::string>()->value_name("DIR"),
      "folder to create (default: ./NAME); it must not exist or be empty");
  po::positional_options_description pos;
  pos.add("name", 1);
  auto p = parse_command(
      "new-plugin", "NAME [--dir DIR]",
      "Writes a minimal workload plugin project that builds against an installed\n"
      "gpusweep: CMakeLists.txt (find_package(gpusweep CONFIG) and gpusweep_add_plugin),\n"
      "NAME.cpp (a small LibTorch model with one knob, the common settings applied by\n"
      "torchkit), README.md and sweep.json (a two-config sweep). The guide is\n"
      "docs/writing-plugins.md (installed under share/doc/gpusweep).",
      o, pos, args);
  if (p.help) return 0;
  const std::string name = p.vm["name"].as<std::string>();
  validate_name(name);
  const std::string dir = p.vm.count("dir") != 0U ? p.vm["dir"].as<std::string>() : name;

  // A name already on the plugin path would shadow, or be shadowed by, that plugin.
  if (auto existing = Registry({}).find(name)) {
    throw UsageError("new-plugin: a plugin named '" + name + "' already exists (" + existing->path +
                     "); pick another name");
  }

  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      throw UsageError("new-plugin: '" + dir +
                       "' exists and is not a folder; choose another "
                       "--dir");
    }
    if (!fs::is_empty(dir, ec)) {
      throw UsageError("new-plugin: '" + dir +
                       "' already exists and is not empty; choose "
                       "another --dir or remove it (new-plugin never overwrites files)");
    }
  }
  fs::create_directories(dir, ec);
  if (ec) throw Error("new-plugin: cannot create '" + dir + "': " + ec.message());

  const std::map<std::string, std::string> vars = {
      {"name", name},
      {"class", class_name(name)},
      {"gpusweep_version", build::version()},
      {"abi", std::to_string(GPUSWEEP_ABI_MAJOR) + "." + std::to_string(GPUSWEEP_ABI_MINOR)}};
  const fs::path root(dir);
  std::vector<std::string> written;
  for (const auto& t : plugin_templates()) {
    const fs::path out = root / output_name(t.name, name);
    std::ofstream f(out, std::ios::binary);
    f << substitute(t.text, vars);
    f.close();
    if (!f) throw Error("new-plugin: cannot write '" + out.string() + "'");
    written.push_back(out.string());
  }

  const auto prefix = install_prefix();
  const std::string d = quoted(dir);
  std::cout << "created plugin project '" << name << "' in " << dir << "/:\n";
  for (const auto& w : written) std::cout << "  " << w << "\n";
  std::cout << "\nnext:\n"
            << "  cmake -S " << d << " -B " << d << "/build -DCMAKE_PREFIX_PATH="
            << (prefix ? quoted(prefix->string()) : "<where gpusweep is installed>") << "\n"
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

}  // namespace gpusweep::host
