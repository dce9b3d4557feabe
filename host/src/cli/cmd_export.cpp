// `gpusweep export`: a run's trials or blocks as CSV or JSON (report/export.hpp).
#include "cli/cli.hpp"
#include "report/export.hpp"
#include "support/error.hpp"

#include <fstream>
#include <iostream>

namespace gpusweep::host {

int cmd_export(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep name (default: the latest run)");
  add_db_option(o);
  const std::vector<OutputFormat> formats = {OutputFormat::csv, OutputFormat::json};
  add_format_option(o, formats);
  o.add_options()("blocks", po::bool_switch(), "one row per measured block instead of per trial")(
      "output,o", po::value<std::string>(), "write to this file instead of stdout");
  auto p = parse_command("export", "[--sweep NAME] [--format csv|json] [--blocks] [-o FILE]",
                         "Exports a sweep's trials (settings as columns, status, summary\n"
                         "statistics, quality) or its block samples, for pandas,\n"
                         "spreadsheets and notebooks.",
                         o, {}, args);
  if (p.help) return 0;
  const OutputFormat format = format_of(p.vm, formats);
  const OpenedSweep run = open_sweep(p.vm);
  const bool per_block = p.vm["blocks"].as<bool>();
  if (p.vm.count("output") == 0U) {
    write_export(*run.store, run.sweep, per_block, format, std::cout);
    return 0;
  }
  const std::string path = p.vm["output"].as<std::string>();
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error("cannot write '" + path + "'");
  const int64_t rows = write_export(*run.store, run.sweep, per_block, format, file);
  if (!file) throw Error("cannot write '" + path + "'");
  std::cerr << "wrote " << rows << " rows to " << path << "\n";
  return 0;
}

}  // namespace gpusweep::host
