// Command-line plumbing; see cli.hpp.
#include "cli/cli.hpp"

#include "analysis/run_alive.hpp"

#include "support/error.hpp"
#include "support/format.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

namespace gpusweep::host {

std::optional<std::string> gpus_of(const po::variables_map& vm) {
  if (vm.count("gpus") == 0U) return std::nullopt;
  return vm["gpus"].as<std::string>();
}

std::vector<std::string> strings_of(const po::variables_map& vm, const char* option) {
  if (vm.count(option) == 0U) return {};
  return vm[option].as<std::vector<std::string>>();
}

Json key_values(const po::variables_map& vm, const char* option, const std::string& example) {
  Json out = Json::object();
  for (const auto& s : strings_of(vm, option)) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError(std::string("--") + option + " " + s + ": expected key=value (for example " +
                       example + ")");
    }
    out[s.substr(0, eq)] = parse_cli_value(s.substr(eq + 1));
  }
  return out;
}

std::vector<std::string> plugin_paths(const po::variables_map& vm) {
  return strings_of(vm, "plugin-path");
}

double fraction_option(const po::variables_map& vm, const char* name) {
  std::string text = vm[name].as<std::string>();
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  double v = NAN;
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) v = NAN;
  } catch (const std::exception&) {
  }
  if (percent) v /= 100;
  if (!(v > 0 && v < 1)) {
    throw UsageError(std::string("--") + name + " " + vm[name].as<std::string>() +
                     ": give a percentage (3%) or a fraction (0.03), above 0 and below 100%");
  }
  return v;
}

int int_option(const po::variables_map& vm, const char* name) {
  const int64_t v = vm[name].as<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    throw UsageError(std::string("--") + name + " " + std::to_string(v) + ": out of range");
  }
  return static_cast<int>(v);
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!(f << text) || !f.flush()) throw Error("cannot write '" + path + "'");
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

OutputFormat format_of(const po::variables_map& vm, const std::vector<OutputFormat>& offered) {
  const std::string text = vm["format"].as<std::string>();
  const OutputFormat f = parse_output_format(text);
  for (OutputFormat o : offered) {
    if (o == f) return f;
  }
  std::vector<std::string> names;
  for (OutputFormat o : offered) names.emplace_back(output_format_name(o));
  throw UsageError("--format " + text + ": this command prints " + name_list(names));
}

OpenedSweep open_sweep(const po::variables_map& vm) {
  const std::string db_path = vm["db"].as<std::string>();
  if (!std::filesystem::exists(db_path)) {
    throw UsageError("no database at '" + db_path + "'; pass --db or run a sweep first");
  }
  OpenedSweep o;
  o.store = std::make_unique<db::Store>(db_path, db::Connection::Mode::read_only);
  auto sweep = vm.count("sweep") != 0U ? o.store->latest_sweep(vm["sweep"].as<std::string>())
                                       : o.store->latest_sweep();
  if (!sweep) {
    throw UsageError("no such sweep in " + db_path + " (list them: gpusweep results --list)");
  }
  o.sweep = *sweep;
  return o;
}

void note_unfinished(const OpenedSweep& run, const po::variables_map& vm, OutputFormat format) {
  const std::string note = unfinished_note(*run.store, vm["db"].as<std::string>(), run.sweep);
  if (!note.empty()) {
    (format == OutputFormat::table ? std::cout : std::cerr) << "note: " << note << "\n";
  }
}

}  // namespace gpusweep::host
