// What the files of serve/'s JSON API share (internal to serve/).
#pragma once

#include "model/sweep.hpp"

#include <string>

namespace gpusweep::host::detail {

// What kind of run a spec makes, as the page labels it.
std::string run_kind(const SweepSpec& spec);

}  // namespace gpusweep::host::detail
