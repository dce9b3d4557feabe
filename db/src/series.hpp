// Block series (migration 006): each trial's blocks packed in one row.
#pragma once

#include <gpusweep/db/sqlite.hpp>
#include <gpusweep/db/store.hpp>

#include <string>
#include <string_view>

namespace gpusweep::db {

// A row's blobs (throughput as little-endian doubles, cycles as
// little-endian int64, -2^63 for none, or empty) into `into`. Throws DbError
// naming the trial when the blobs' sizes disagree with blocks.
void unpack_series(int64_t trial_id, int64_t blocks, std::string_view throughput,
                   std::string_view cycles, BlockSeries& into);

// Writes a trial's series row (replacing one there).
void insert_series(Connection& db, int64_t trial_id, const BlockSeries& s);
// Migration 006's data step: a series row for every trial with blocks.
void backfill_series(Connection& db);

}  // namespace gpusweep::db
