// `gpusweep report`: the HTML report of a sweep.
#include "cli/cli.hpp"
#include "report/report.hpp"
#include "support/error.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace {

int run_report(const po::variables_map& vm) {
  const OpenedSweep run = open_sweep(vm);
  const db::SweepRecord* sweep = &run.sweep;
  const std::string html = render_report(*run.store, run.sweep, vm["selection-data"].as<bool>());
  const std::string out = vm["html"].as<std::string>();
  write_text_file(out, html);
  std::cout << "wrote " << out << " (" << html.size() / 1024 << " KiB): sweep '" << sweep->name
            << "' run " << sweep->id << "\n";
  return 0;
}

}  // namespace

CommandDef cmd_report() {
  return {
      "report",
      "write a self-contained HTML report with charts",
      "Writes one self-contained HTML file (inline SVG charts, no scripts, no network):\n"
      "throughput per config with 95% whiskers, speed-up against the baseline, block\n"
      "distributions, peak memory against throughput with the Pareto front, quality\n"
      "against speed, best's pick, compare's tables, the environment and the trials that\n"
      "failed. A tune run adds its race, its charts from the confirmation rounds unless\n"
      "--selection-data.",
      "",
      {sweep_name_option(), db_option(), text("html", "FILE", "the HTML file to write").required(),
       flag("selection-data",
            "a tune run: its charts and tables from every round, the racing rounds included "
            "(by default from its fresh confirmation rounds only: the racing rounds flatter "
            "the winner)")},
      {},
      {},
      run_report};
}

}  // namespace gpusweep::host
