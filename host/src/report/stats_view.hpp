// `gpusweep stats`: the host's own trial stats (spec/stats.hpp), as a
// listing in any format; md is docs/stats.md.
#pragma once

#include "report/output.hpp"

#include <string>

namespace gpusweep::host {

std::string stats_listing(OutputFormat format);

}  // namespace gpusweep::host
