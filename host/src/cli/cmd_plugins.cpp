// `gpusweep plugins [NAME]`: the plugins on the plugin path, or one manifest;
// `gpusweep plugins --check FILE`: validates one plugin thoroughly.
#include "cli/cli.hpp"
#include "plugins/plugin_check.hpp"
#include "plugins/registry.hpp"
#include "report/output.hpp"
#include "report/plugin_view.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <filesystem>
#include <iostream>

namespace gpusweep::host {

namespace {

// --check takes a file, or the name of a plugin on the plugin path.
std::string check_target(const std::string& arg, const Registry& registry) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec) || arg.find('/') != std::string::npos ||
      (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".so") == 0)) {
    return arg;
  }
  if (auto f = registry.find(arg)) return f->path;
  registry.describe(arg);  // throws the unknown-workload error with its did-you-mean
  return arg;
}

// The plugins on the path, one row each (those that do not load, with why);
// exit code 1 when one does not load or none is found.
int list_plugins(const Registry& registry, OutputFormat format) {
  std::vector<Json> rows;
  int broken = 0;
  for (const auto& f : registry.list()) {
    try {
      const auto info = registry.describe_file(f);
      rows.push_back({{"name", f.name},
                      {"version", info.manifest.version},
                      {"unit", info.manifest.unit},
                      {"description", info.manifest.description},
                      {"file", f.path},
                      {"loads", true}});
    } catch (const PluginError& e) {
      ++broken;
      rows.push_back({{"name", f.name},
                      {"version", nullptr},
                      {"unit", nullptr},
                      {"description", "does not load: " + e.reason()},
                      {"file", f.path},
                      {"loads", false}});
    }
  }
  if (rows.empty()) {
    std::string dirs;
    for (const auto& d : registry.search_path()) dirs += "\n  " + d;
    std::cout << "no plugins found; searched:" << dirs << "\n";
    return 1;
  }
  const bool table = format == OutputFormat::table;
  std::vector<Column> cols = {{"name", "name", false, {}},
                              {"version", "version", false, {}},
                              {"unit", "unit", false, {}},
                              {"description", "description", false,
                               [table](const Json& r) {
                                 const std::string d = r["description"].get<std::string>();
                                 return table && r["loads"].get<bool>() ? truncate(d, 60) : d;
                               }},
                              {"file", "file", false, {}}};
  if (!table) cols.push_back({"loads", "loads", false, {}});
  std::cout << render(rows, cols, format);
  return broken == 0 ? 0 : 1;
}

}  // namespace

int cmd_plugins(const Args& args) {
  po::options_description o;
  o.add_options()("name", po::value<std::string>(), "plugin to describe")(
      "format", po::value<std::string>()->default_value("table"),
      "table, csv, json or md (the list)")(
      "check", po::value<std::string>()->value_name("FILE"),
      "validate one plugin (a gpusweep_<name>.so file, or a name on the plugin path): ABI, "
      "manifest schema, and a create/step/evaluate/destroy smoke run with the smallest config, "
      "in worker processes; exit code 1 when problems are found")(
      "steps", po::value<int64_t>()->default_value(5), "steps of the --check smoke run")(
      "timeout-s", po::value<double>()->default_value(300),
      "--check: give up on a worker after this many seconds");
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("name", 1);
  auto p = parse_command("plugins", "[NAME] [--plugin-path DIR ...] | --check FILE",
                         "Lists the workload plugins found on the plugin path, or prints one\n"
                         "plugin's manifest: its settings, their types, defaults and ranges.\n"
                         "With --check, validates one plugin file and prints every problem\n"
                         "with its fix (docs/writing-plugins.md, \"Testing a plugin\").",
                         o, pos, args);
  if (p.help) return 0;
  Registry registry(plugin_paths(p.vm));
  if (p.vm.count("check") != 0U) {
    if (p.vm.count("name") != 0U) {
      throw UsageError("plugins: give either NAME or --check FILE, not both");
    }
    const auto steps = p.vm["steps"].as<int64_t>();
    const auto timeout = p.vm["timeout-s"].as<double>();
    if (steps < 1 || steps > 100000) throw UsageError("plugins --steps: must be in 1..100000");
    if (!(timeout > 0)) throw UsageError("plugins --timeout-s: must be positive");
    const CheckReport report =
        check_plugin(check_target(p.vm["check"].as<std::string>(), registry), steps, timeout);
    std::cout << render_check(report);
    return report.problems() == 0 ? 0 : 1;
  }
  if (p.vm.count("name") != 0U) {
    const PluginInfo info = registry.describe(p.vm["name"].as<std::string>());
    std::cout << plugin_text(info.manifest, info.file.path, info.abi, info.runtime);
    return 0;
  }
  return list_plugins(registry, parse_output_format(p.vm["format"].as<std::string>()));
}

}  // namespace gpusweep::host
