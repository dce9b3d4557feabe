// `gpusweep plugins [NAME]`: the plugins on the plugin path, or one manifest;
// `gpusweep plugins --check FILE`: validates one plugin thoroughly.
#include "cli/cli.hpp"
#include "plugin_host/plugin_check.hpp"
#include "plugin_host/registry.hpp"
#include "plugin_host/survey.hpp"
#include "report/plugin_view.hpp"
#include "support/error.hpp"

#include <iostream>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kPluginsFormats = {OutputFormat::table, OutputFormat::csv,
                                                   OutputFormat::json, OutputFormat::md};

int check(const Registry& registry, const po::variables_map& vm, OutputFormat format) {
  if (vm.count("name") != 0U) throw UsageError("plugins: give either NAME or --check FILE");
  const auto steps = vm["steps"].as<int64_t>();
  const auto timeout = vm["timeout-s"].as<double>();
  if (steps < 1 || steps > 100000) throw UsageError("plugins --steps: must be in 1..100000");
  if (!(timeout > 0)) throw UsageError("plugins --timeout-s: must be positive");
  const PluginCheckReport report =
      check_plugin(registry.file_for(vm["check"].as<std::string>()), steps, timeout,
                   key_values(vm, "set", "module=step.py"));
  std::cout << (format == OutputFormat::json ? plugin_check_json(report).dump(2) + "\n"
                                             : plugin_check_text(report));
  return report.problems() == 0 ? 0 : 1;
}

int run_plugins(const po::variables_map& vm) {
  const OutputFormat format = format_of(vm, kPluginsFormats);
  const bool one = vm.count("check") != 0U || vm.count("name") != 0U;
  if (one && format != OutputFormat::table && format != OutputFormat::json) {
    throw UsageError("plugins --format: NAME and --check print table or json");
  }
  Registry registry(plugin_paths(vm));
  if (vm.count("check") != 0U) return check(registry, vm, format);
  if (vm.count("name") != 0U) {
    const PluginInfo info =
        registry.describe(vm["name"].as<std::string>(), key_values(vm, "set", "module=step.py"));
    std::cout << (format == OutputFormat::json
                      ? plugin_json(info).dump(2) + "\n"
                      : plugin_text(info.manifest, info.file.path, info.abi, info.runtime));
    return 0;
  }
  const PluginSurvey survey = survey_plugins(registry);
  if (survey.rows.empty()) {
    std::cout << "no plugins found; searched: " << survey.search_path << "\n";
    return 1;
  }
  std::cout << plugin_list(survey, format);
  return survey.problems.empty() ? 0 : 1;
}

}  // namespace

CommandDef cmd_plugins() {
  return {"plugins",
          "list workload plugins, show one's settings, --check one",
          "Lists the workload plugins found on the plugin path, or prints one plugin's\n"
          "manifest: its settings, their types, defaults and ranges. With --check, validates\n"
          "one plugin file (ABI, manifest, a smoke run in worker processes, each setting it\n"
          "declares seen to act) and prints every problem with its fix; exit 1 when there are.",
          "writing-plugins.md",
          {text("name", "NAME", "plugin to describe"),
           text("check", "FILE",
                "validate one plugin (a gpusweep_<name>.so file, or a name on the plugin path)"),
           integer("steps", "N", "steps of the --check smoke run", 5),
           number("timeout-s", "S", "--check: give up on a worker after this many seconds", 300),
           texts("set", "KEY=VALUE",
                 "the parameter that selects the workload of a bridge plugin, for NAME and "
                 "--check: python's module (--set module=path/to/step.py)"),
           format_option(kPluginsFormats), plugin_path_option()},
          {"name"},
          {"[NAME] [options]", "--check FILE [--set module=FILE] [options]"},
          run_plugins};
}

}  // namespace gpusweep::host
