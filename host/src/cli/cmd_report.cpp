// `gpusweep report`: the HTML report of a sweep.
#include "cli/cli.hpp"
#include "report/report.hpp"
#include "support/error.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

int cmd_report(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep name (default: the latest run)");
  add_db_option(o);
  o.add_options()("html", po::value<std::string>()->required(), "the HTML file to write")(
      "selection-data",
      "a tune run: its charts and tables from every round, the racing rounds included (by "
      "default from its fresh confirmation rounds only: the racing rounds flatter the winner)");
  auto p = parse_command(
      "report", "[--sweep NAME] [--db FILE] [--selection-data] --html FILE",
      "Writes one self-contained HTML file (inline SVG charts, no scripts, no network):\n"
      "throughput per config with 95% whiskers, speed-up against the baseline, block\n"
      "throughput distributions, peak memory against throughput with the Pareto front,\n"
      "quality against speed, the environment, and trials that failed or were skipped.\n"
      "A tune run adds its race; its charts and tables then come from the confirmation\n"
      "rounds (the winner, the runner-up and the baseline), unless --selection-data.",
      o, {}, args);
  if (p.help) return 0;
  const OpenedSweep run = open_sweep(p.vm);
  const db::SweepRecord* sweep = &run.sweep;
  const std::string html = render_report(*run.store, run.sweep, p.vm.count("selection-data") != 0U);
  const std::string out = p.vm["html"].as<std::string>();
  write_text_file(out, html);
  std::cout << "wrote " << out << " (" << html.size() / 1024 << " KiB): sweep '" << sweep->name
            << "' run " << sweep->id << "\n";
  return 0;
}

}  // namespace gpusweep::host
