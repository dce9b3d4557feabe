// What the files of serve/'s JSON API share (internal to serve/).
#pragma once

#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <optional>

#include <string>

namespace gpusweep::host::detail {

// What kind of run a spec makes, as the page labels it.
std::string run_kind(const SweepSpec& spec);

// The ETA of a live run with counts c: the trials left at the finished
// trials' mean wall time, less what the running ones have done (each at most
// 95% of a mean trial), shared among as many trials as run now. Nothing
// before a trial finished.
std::optional<double> eta_s(const db::RunCounts& c, double mean_wall_s, int64_t running);

}  // namespace gpusweep::host::detail
