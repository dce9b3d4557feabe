// `gpusweep stats`: the statistics gpusweep stores about each trial, from the
// table in host/src/spec/stats.hpp.
#include "cli/cli.hpp"
#include "report/stats_view.hpp"

#include <iostream>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kStatsFormats = {OutputFormat::table, OutputFormat::csv,
                                                 OutputFormat::json, OutputFormat::md};

int run_stats(const po::variables_map& vm) {
  const OutputFormat format = format_of(vm, kStatsFormats);
  std::cout << (vm["reported"].as<bool>() ? reported_stats_listing(format) : stats_listing(format));
  return 0;
}

}  // namespace

CommandDef cmd_stats() {
  return {"stats",
          "the statistics gpusweep stores about each trial, and their meaning",
          "Lists the statistics gpusweep itself stores about each trial (besides the plugin's\n"
          "own): name, unit, how the views combine a config's repeats, and meaning. Query them\n"
          "with gpusweep sql on the metrics table (kind 'stat'); md is docs/stats.md.\n"
          "--reported lists the stats workloads report that gpusweep reads by name.",
          "stats.md",
          {format_option(kStatsFormats),
           flag("reported",
                "list the stats workloads report that gpusweep reads by name instead (torchkit's, "
                "the Python SDK's, the worker's)")},
          {},
          {},
          run_stats};
}

}  // namespace gpusweep::host
