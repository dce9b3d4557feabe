// Plugin projects; see scaffold.hpp.
#include "plugin_host/scaffold.hpp"

#include "support/error.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
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

}  // namespace

// "my_model" -> "MyModel".
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

void validate_plugin_name(const std::string& name) {
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

namespace {

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

// "plugin.cpp.in" -> "<name>.cpp", "workload.py.in" -> "<name>.py";
// "README.md.in" -> "README.md".
std::string output_name(std::string template_name, const std::string& name) {
  if (template_name.size() > 3 && template_name.compare(template_name.size() - 3, 3, ".in") == 0) {
    template_name.resize(template_name.size() - 3);
  }
  if (template_name == "plugin.cpp") return name + ".cpp";
  if (template_name == "workload.py") return name + ".py";
  return template_name;
}

}  // namespace

std::vector<std::string> write_plugin_project(
    const std::string& name, const std::string& dir, const std::vector<EmbeddedFile>& templates,
    const std::map<std::string, std::string>& extra_vars) {
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

  std::map<std::string, std::string> vars = {
      {"name", name},
      {"class", class_name(name)},
  };
  for (const auto& [k, v] : extra_vars) vars[k] = v;
  const fs::path root(dir);
  std::vector<std::string> written;
  for (const auto& t : templates) {
    const fs::path out = root / output_name(t.name, name);
    std::ofstream f(out, std::ios::binary);
    f << substitute(t.text, vars);
    f.close();
    if (!f) throw Error("new-plugin: cannot write '" + out.string() + "'");
    written.push_back(out.string());
  }

  return written;
}

}  // namespace gpusweep::host
