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

namespace gpusweep::host {

Parsed parse_command(const std::string& name, const std::string& synopsis,
                     const std::string& description, const po::options_description& options,
                     const po::positional_options_description& positional, const Args& args) {
  po::options_description all("Options");
  all.add_options()("help,h", "show this help");
  all.add(options);
  Parsed p;
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), p.vm);
    if (p.vm.count("help") != 0U) {
      std::cout << "usage: gpusweep " << name << " " << synopsis << "\n\n"
                << description << "\n\n"
                << all << "\n";
      p.help = true;
      return p;
    }
    po::notify(p.vm);
  } catch (const po::error& e) {
    throw UsageError("gpusweep " + name + ": " + e.what() + " (see: gpusweep " + name + " --help)");
  }
  return p;
}

void add_db_option(po::options_description& o) {
  o.add_options()("db", po::value<std::string>()->default_value("gpusweep.db"),
                  "results database (SQLite)");
}

void add_plugin_path_option(po::options_description& o) {
  o.add_options()("plugin-path", po::value<std::vector<std::string>>()->composing(),
                  "extra folder to search for gpusweep_<name>.so plugins (repeatable)");
}

void add_allow_plugin_change_option(po::options_description& o) {
  o.add_options()("allow-plugin-change", po::bool_switch(),
                  "continue a run although the plugin file differs from the build its trials "
                  "ran (another hash): each trial records the build that ran it "
                  "(trials.run_plugin_hash)");
}

void add_set_option(po::options_description& o) {
  o.add_options()("set", po::value<std::vector<std::string>>()->composing(),
                  "override a setting: key=value (base), measure.key=value (protocol); repeatable");
}

void add_gpus_option(po::options_description& o) {
  o.add_options()("gpus", po::value<std::string>(),
                  "GPUs for the workers, one each: positions among the visible GPUs (0,1 or "
                  "0-3) or all (the default when --jobs > 1 runs trials on GPUs); each worker "
                  "sees only its own, as cuda:0 (CUDA_VISIBLE_DEVICES)");
}

std::optional<std::string> gpus_option(const po::variables_map& vm) {
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

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!(f << text) || !f.flush()) throw Error("cannot write '" + path + "'");
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }
bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

namespace {

std::string format_names(const std::vector<OutputFormat>& offered) {
  std::vector<std::string> names;
  for (OutputFormat f : offered) names.emplace_back(output_format_name(f));
  return name_list(names);
}

}  // namespace

void add_format_option(po::options_description& o, const std::vector<OutputFormat>& offered) {
  o.add_options()("format",
                  po::value<std::string>()->default_value(output_format_name(offered.front())),
                  format_names(offered).c_str());
}

OutputFormat format_of(const po::variables_map& vm, const std::vector<OutputFormat>& offered) {
  const std::string text = vm["format"].as<std::string>();
  const OutputFormat f = parse_output_format(text);
  for (OutputFormat o : offered) {
    if (o == f) return f;
  }
  throw UsageError("--format " + text + ": this command prints " + format_names(offered));
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
