// `gpusweep settings`: the common settings every LibTorch plugin and Python
// workload accepts, from the table in sdk/include/gpusweep/common_settings.hpp;
// with --measure, the sweep file's measure keys (spec/sweep_measure_keys.hpp).
#include "cli/cli.hpp"
#include "report/output.hpp"
#include "report/settings_view.hpp"
#include "spec/sweep_measure_keys.hpp"

#include <gpusweep/common_settings.hpp>

#include <iostream>

namespace gpusweep::host {

namespace {

// The measure keys' table as a listing; md is the table in docs/sweep-file.md.
std::string measure_listing(OutputFormat format) {
  std::vector<nlohmann::json> records;
  for (const auto& k : measure_keys()) {
    records.push_back({{"key", k.name},
                       {"allowed", measure_allowed(k)},
                       {"default", k.default_text},
                       {"meaning", k.meaning}});
  }
  const std::vector<Column> columns = {{"key", "key", false, {}},
                                       {"allowed", "allowed", false, {}},
                                       {"default", "default", false, {}},
                                       {"meaning", "meaning", false, {}}};
  return render(records, columns, format);
}

}  // namespace

int cmd_settings(const Args& args) {
  const std::vector<OutputFormat> formats = {OutputFormat::table, OutputFormat::csv,
                                             OutputFormat::json, OutputFormat::md};
  po::options_description o;
  add_format_option(o, formats);
  o.add_options()("measure", po::bool_switch(),
                  "list the sweep file's measure keys instead: allowed values, default and "
                  "meaning (md is the table in docs/sweep-file.md)");
  auto p = parse_command("settings", "[--measure] [--format table|csv|json|md]",
                         "Lists the common settings: their types, defaults and allowed values,\n"
                         "the devices their values need, what they act on, what a workload\n"
                         "must have for them, and what diagnose suggests sweeping. json is the\n"
                         "whole table (the Python SDK reads the same); md is docs/settings.md.",
                         o, {}, args);
  if (p.help) return 0;
  if (p.vm["measure"].as<bool>()) {
    std::cout << measure_listing(format_of(p.vm, formats));
    return 0;
  }
  switch (format_of(p.vm, formats)) {
    case OutputFormat::json:
      std::cout << common_settings_json().dump(2) << "\n";
      break;
    case OutputFormat::md:
      std::cout << settings_markdown();
      break;
    case OutputFormat::table:
      std::cout << settings_list(OutputFormat::table);
      break;
    case OutputFormat::csv:
      std::cout << settings_list(OutputFormat::csv);
      break;
  }
  return 0;
}

}  // namespace gpusweep::host
