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

const std::vector<OutputFormat> kFormats = {OutputFormat::table, OutputFormat::csv,
                                            OutputFormat::json, OutputFormat::md};

int check(const Registry& registry, const po::variables_map& vm, OutputFormat format) {
  if (vm.count("name") != 0U) throw UsageError("plugins: give either NAME or --check FILE");
  const auto steps = vm["steps"].as<int64_t>();
  const auto timeout = vm["timeout-s"].as<double>();
  if (steps < 1 || steps > 100000) throw UsageError("plugins --steps: must be in 1..100000");
  if (!(timeout > 0)) throw UsageError("plugins --timeout-s: must be positive");
  const CheckReport report = check_plugin(registry.file_for(vm["check"].as<std::string>()), steps,
                                          timeout, key_values(vm, "set", "module=step.py"));
  std::cout << (format == OutputFormat::json ? check_json(report).dump(2) + "\n"
                                             : check_text(report));
  return report.problems() == 0 ? 0 : 1;
}

}  // namespace

int cmd_plugins(const Args& args) {
  po::options_description o;
  o.add_options()("name", po::value<std::string>(), "plugin to describe")(
      "check", po::value<std::string>()->value_name("FILE"),
      "validate one plugin (a gpusweep_<name>.so file, or a name on the plugin path): ABI, "
      "manifest schema, and a create/step/evaluate/destroy smoke run with the smallest config, "
      "in worker processes; exit code 1 when problems are found")(
      "steps", po::value<int64_t>()->default_value(5), "steps of the --check smoke run")(
      "timeout-s", po::value<double>()->default_value(300),
      "--check: give up on a worker after this many seconds")(
      "set", po::value<std::vector<std::string>>()->value_name("KEY=VALUE"),
      "the parameter that selects the workload of a bridge plugin, for NAME and --check: "
      "python's module (--set module=path/to/step.py)");
  add_format_option(o, kFormats);
  add_plugin_path_option(o);
  po::positional_options_description pos;
  pos.add("name", 1);
  auto p =
      parse_command("plugins", "[NAME] [--plugin-path DIR ...] | --check FILE [--set module=FILE]",
                    "Lists the workload plugins found on the plugin path, or prints one\n"
                    "plugin's manifest: its settings, their types, defaults and ranges.\n"
                    "With --check, validates one plugin file and prints every problem\n"
                    "with its fix (docs/writing-plugins.md, \"Testing a plugin\").",
                    o, pos, args);
  if (p.help) return 0;
  const OutputFormat format = format_of(p.vm, kFormats);
  const bool one = p.vm.count("check") != 0U || p.vm.count("name") != 0U;
  if (one && format != OutputFormat::table && format != OutputFormat::json) {
    throw UsageError("plugins --format: NAME and --check print table or json");
  }
  Registry registry(plugin_paths(p.vm));
  if (p.vm.count("check") != 0U) return check(registry, p.vm, format);
  if (p.vm.count("name") != 0U) {
    const PluginInfo info = registry.describe(p.vm["name"].as<std::string>(),
                                              key_values(p.vm, "set", "module=step.py"));
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

}  // namespace gpusweep::host
