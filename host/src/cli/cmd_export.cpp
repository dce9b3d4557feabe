// `gpusweep export`: a run's trials or blocks as CSV or JSON (report/export.hpp).
#include "cli/cli.hpp"
#include "report/export.hpp"
#include "support/error.hpp"

#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kExportFormats = {OutputFormat::csv, OutputFormat::json};

int run_export(const po::variables_map& vm) {
  const OutputFormat format = format_of(vm, kExportFormats);
  const OpenedSweep run = open_sweep(vm);
  const bool per_block = vm["blocks"].as<bool>();
  if (vm.count("output") == 0U) {
    write_export(*run.store, run.sweep, per_block, format, std::cout);
    return 0;
  }
  const std::string path = vm["output"].as<std::string>();
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error("cannot write '" + path + "'");
  const int64_t rows = write_export(*run.store, run.sweep, per_block, format, file);
  if (!file) throw Error("cannot write '" + path + "'");
  std::cerr << "wrote " << rows << " rows to " << path << "\n";
  return 0;
}

}  // namespace

CommandDef cmd_export() {
  return {"export",
          "export a sweep's trials or blocks as csv or json",
          "Exports a sweep's trials (settings as columns, status, summary statistics, quality)\n"
          "or its block samples, for pandas, spreadsheets and notebooks. A trial's fields are\n"
          "named as results and serve name them (see \"A trial's fields\" below).",
          "commands.md#a-trials-fields",
          {sweep_name_option(), db_option(), format_option(kExportFormats),
           flag("blocks", "one row per measured block instead of per trial"),
           text("output", "FILE", "write to this file instead of stdout").with_short('o')},
          {},
          {},
          run_export};
}

}  // namespace gpusweep::host
