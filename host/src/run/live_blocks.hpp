// What a running run's trials have measured so far, for `gpusweep serve`'s
// block strips: the phase and the blocks (throughput each) of every trial
// running now, written beside the database (db/live.hpp), at most every
// half second and whenever a trial starts or ends, replaced by rename so
// that a reader never sees half a file. Nothing goes into the database
// before a trial's own commit, so a live view costs the writer nothing there.
// The file is removed when this object goes (the run ended or was
// interrupted); a file left by a killed host is stale, and serve reads it
// only while the run is alive (db/live.hpp): its lock is held, or, seen from
// another node, the heartbeat file this object rewrites from a thread of its
// own every kLiveHeartbeatS (with this host's name and pid) is fresh.
//
// Writing it must never fail the sweep: the first failure (a read-only
// folder, a full disk) turns it off, with a note saying why.
#pragma once

#include "protocol/events.hpp"

#include <gpusweep/db/live.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpusweep::host {

class LiveBlocks {
 public:
  // For run `run_id` of the database at `db_path`; the heartbeat every
  // `beat_s` seconds (tests shorten it).
  LiveBlocks(const std::string& db_path, int64_t run_id, double beat_s = db::kLiveHeartbeatS);
  ~LiveBlocks();
  LiveBlocks(const LiveBlocks&) = delete;
  LiveBlocks& operator=(const LiveBlocks&) = delete;

  void started(int64_t trial_id);
  // A worker's event: phase and block events count, others are ignored.
  void event(int64_t trial_id, const event::Event& e);
  void finished(int64_t trial_id);

  // Why it stopped writing ("" while it writes).
  const std::string& off_reason() const { return off_; }

 private:
  struct Trial {
    Phase phase = Phase::start;
    std::vector<double> throughput;  // samples / seconds of each block so far
  };
  void write(bool now);
  void beat_until_stopped(double beat_s);

  std::string path_;
  std::string beat_path_;
  std::mutex beat_mutex_;
  std::condition_variable beat_stop_;
  bool stopping_ = false;
  std::thread beat_;
  std::string off_;
  std::map<int64_t, Trial> running_;
  std::chrono::steady_clock::time_point written_{};
};

}  // namespace gpusweep::host
