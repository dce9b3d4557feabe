// Where a running run's host keeps what its running trials have measured so
// far (the blocks of trials not yet committed): a small JSON file beside the
// database, never in it, so that a live view (`gpusweep serve`) costs the
// database nothing. The host (run/live_blocks.hpp) replaces it by rename,
// so a reader sees a whole file or the one before; a file left by a killed
// host is stale, and readers use it only while the run is alive.
//
// Alive: the run's lock is held (RunLock::held), or, for a host on another
// node, its heartbeat file is fresh. A cluster filesystem may keep locks on
// the node that took them (Lustre's `localflock`), so a login node running
// `gpusweep serve` may not see a compute node's lock: the host also keeps
// "<run>.beat" beside the live file, holding its host name and pid and
// rewritten in place (the same inode, the same bytes) every kLiveHeartbeatS,
// and a reader on another node takes a beat younger than kLiveStaleS as a
// live run: two of NFS's longest attribute caches (60 s), so that a cached
// modification time does not make a live run look stopped. On the host's own node the lock
// decides (a beat left by a killed host is younger than that for a while).
#pragma once

#include <cstdint>
#include <string>

namespace gpusweep::db {

inline std::string live_blocks_path(const std::string& db_path, int64_t run_id) {
  return db_path + "-live/" + std::to_string(run_id) + ".json";
}

inline std::string live_beat_path(const std::string& db_path, int64_t run_id) {
  return db_path + "-live/" + std::to_string(run_id) + ".beat";
}

constexpr double kLiveHeartbeatS = 10;
constexpr double kLiveStaleS = 120;

}  // namespace gpusweep::db
