// Whether a run's host is still running it, as the views that read a run
// while it runs (compare, serve) tell a live run from one left unfinished.
#pragma once

#include <cstdint>
#include <string>

namespace gpusweep::host {

// Whether the run's host is alive (db/live.hpp): its lock is held, or its
// heartbeat file, written on another node, is younger than kLiveStaleS.
bool run_alive(const std::string& db_path, int64_t run_id);

}  // namespace gpusweep::host
