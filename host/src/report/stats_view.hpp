// `gpusweep stats`: the host's own trial stats (spec/stats.hpp) and the
// reported ones it reads (stat_names.hpp), as listings in any format; md is
// docs/stats.md.
#pragma once

#include "report/output.hpp"

#include <string>

namespace gpusweep::host {

// md: both tables, the host's and the reported ones, as docs/stats.md.
std::string stats_listing(OutputFormat format);
// The stats workloads report that gpusweep reads by name
// (sdk/include/gpusweep/stat_names.hpp): name, unit, who reports it, meaning.
std::string reported_stats_listing(OutputFormat format);

}  // namespace gpusweep::host
