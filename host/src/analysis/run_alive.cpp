// A run's liveness; see run_alive.hpp.
#include "analysis/run_alive.hpp"

#include "support/procfs.hpp"

#include <gpusweep/db/live.hpp>
#include <gpusweep/db/run_lock.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

namespace gpusweep::host {

bool run_alive(const std::string& db_path, int64_t run_id) {
  if (db::RunLock::held(db_path, run_id)) return true;
  const std::string beat = db::live_beat_path(db_path, run_id);
  std::string writer;
  {
    std::ifstream in(beat);
    if (!(in >> writer)) return false;  // no heartbeat: a host of before it, or gone
  }
  if (writer == host_name()) {
    return false;  // on the host's own node its lock is seen: not held, not alive
  }
  std::error_code ec;
  const auto at = std::filesystem::last_write_time(beat, ec);
  if (ec) return false;
  const double age =
      std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - at).count();
  return age <= db::kLiveStaleS;
}

std::string unfinished_note(db::Store& store, const std::string& db_path,
                            const db::SweepRecord& sweep) {
  if (sweep.status == db::SweepStatus::finished) return "";
  const auto counts = store.run_counts(sweep.id);
  if (counts.empty() || counts.front().total <= counts.front().finished) return "";
  const db::RunCounts& c = counts.front();
  const std::string left =
      std::to_string(c.total - c.finished) + " of its " + std::to_string(c.total) + " trials";
  const std::string run = "run " + std::to_string(sweep.id);
  if (run_alive(db_path, sweep.id)) {
    return run + " is still running: " + left +
           " are still to come (and more rounds where measure.precision asks); these figures "
           "are of the " +
           std::to_string(c.finished) + " finished so far and will change";
  }
  return run + " stopped before it finished: " + left + " never ran (`gpusweep resume " +
         sweep.name + " --db " + db_path + "` runs them); these figures are of the " +
         std::to_string(c.finished) + " that did";
}

}  // namespace gpusweep::host
