// The model read back from the database: a run's sweep as it ran.
#pragma once

#include "model/sweep.hpp"

#include <gpusweep/db/store.hpp>

namespace gpusweep::host {

// The sweep spec stored with a sweep row.
SweepSpec stored_spec(const db::SweepRecord& sweep);

}  // namespace gpusweep::host
