// `gpusweep export`: a run's trials (settings as columns, status, summary
// statistics, quality) or its block samples as CSV or JSON, streamed row by
// row (an export can be a million blocks).
#pragma once

#include "report/output.hpp"

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <ostream>

namespace gpusweep::host {

// Writes the export of the run to out in format (csv or json); returns the
// number of rows written.
int64_t write_export(db::Store& store, const db::SweepRecord& sweep, bool per_block,
                     OutputFormat format, std::ostream& out);

}  // namespace gpusweep::host
