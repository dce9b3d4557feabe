// Where a running run's host keeps what its running trials have measured so
// far (the blocks of trials not yet committed): a small JSON file beside the
// database, never in it, so that a live view (`gpusweep serve`) costs the
// database nothing. The host (run/live_blocks.hpp) replaces it by rename,
// so a reader sees a whole file or the one before; a file left by a killed
// host is stale, and readers use it only while the run's lock is held
// (RunLock::held).
#pragma once

#include <cstdint>
#include <string>

namespace gpusweep::db {

inline std::string live_blocks_path(const std::string& db_path, int64_t run_id) {
  return db_path + "-live/" + std::to_string(run_id) + ".json";
}

}  // namespace gpusweep::db
