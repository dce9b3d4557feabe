// `gpusweep stats`: the statistics gpusweep stores about each trial, from the
// table in host/src/spec/stats.hpp.
#include "cli/cli.hpp"
#include "report/stats_view.hpp"

#include <iostream>

namespace gpusweep::host {

int cmd_stats(const Args& args) {
  const std::vector<OutputFormat> formats = {OutputFormat::table, OutputFormat::csv,
                                             OutputFormat::json, OutputFormat::md};
  po::options_description o;
  add_format_option(o, formats);
  auto p = parse_command("stats", "[--format table|csv|json|md]",
                         "Lists the statistics gpusweep itself stores about each trial (besides\n"
                         "the plugin's own): name, unit, how the views combine a config's\n"
                         "repeats, and meaning. Query them with gpusweep sql on the metrics\n"
                         "table (kind 'stat'); md is docs/stats.md.",
                         o, {}, args);
  if (p.help) return 0;
  std::cout << stats_listing(format_of(p.vm, formats));
  return 0;
}

}  // namespace gpusweep::host
