// SQL aggregates every connection has: median(X) and percentile(X, P) (P
// from 0 to 100), for `gpusweep sql` and the queries in db/README.md.
#pragma once

#include <sqlite3.h>

namespace gpusweep::db::detail {

void register_aggregates(sqlite3* db);

}  // namespace gpusweep::db::detail
