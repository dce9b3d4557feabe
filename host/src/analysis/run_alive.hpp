// Whether a run's host is still running it, as the views that read a run
// while it runs (compare, serve) tell a live run from one left unfinished.
#pragma once

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <string>

namespace gpusweep::host {

// Whether the run's host is alive (db/live.hpp): its lock is held, or its
// heartbeat file, written on another node, is younger than kLiveStaleS.
bool run_alive(const std::string& db_path, int64_t run_id);

// What a reader of a run still running (or stopped part way) must know: how
// many of its trials are still to come, and, for a run whose host is gone,
// how to finish it; "" for a finished run.
std::string unfinished_note(db::Store& store, const std::string& db_path,
                            const db::SweepRecord& sweep);

}  // namespace gpusweep::host
