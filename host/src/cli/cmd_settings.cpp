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

const std::vector<OutputFormat> kSettingsFormats = {OutputFormat::table, OutputFormat::csv,
                                                    OutputFormat::json, OutputFormat::md};

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

int run_settings(const po::variables_map& vm) {
  if (vm["measure"].as<bool>()) {
    std::cout << measure_listing(format_of(vm, kSettingsFormats));
    return 0;
  }
  switch (format_of(vm, kSettingsFormats)) {
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

}  // namespace

CommandDef cmd_settings() {
  return {"settings",
          "the common settings every workload accepts, and their rules",
          "Lists the common settings: their types, defaults and allowed values, the devices\n"
          "their values need, what they act on, what a workload must have for them, and what\n"
          "diagnose suggests sweeping. json is the whole table (the Python SDK reads the same);\n"
          "md is docs/settings.md. --measure lists the sweep file's measure keys instead.",
          "settings.md",
          {format_option(kSettingsFormats),
           flag("measure",
                "list the sweep file's measure keys instead: allowed values, default and meaning "
                "(md is the table in docs/sweep-file.md)")},
          {},
          {},
          run_settings};
}

}  // namespace gpusweep::host
