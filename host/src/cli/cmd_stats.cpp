// `gpusweep stats`: the statistics gpusweep stores about each trial, from the
// table in host/src/spec/stats.hpp.
#include "cli/cli.hpp"
#include "report/stats_view.hpp"

#include <iostream>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kFormats = {OutputFormat::table, OutputFormat::csv,
                                            OutputFormat::json, OutputFormat::md};

int run_stats(const po::variables_map& vm) {
  std::cout << stats_listing(format_of(vm, kFormats));
  return 0;
}

}  // namespace

CommandDef cmd_stats() {
  return {"stats",
          "the statistics gpusweep stores about each trial, and their meaning",
          "Lists the statistics gpusweep itself stores about each trial (besides the plugin's\n"
          "own): name, unit, how the views combine a config's repeats, and meaning. Query them\n"
          "with gpusweep sql on the metrics table (kind 'stat'); md is docs/stats.md.",
          "stats.md",
          {format_option(kFormats)},
          {},
          {},
          run_stats};
}

}  // namespace gpusweep::host
