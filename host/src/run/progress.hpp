// Progress of a running sweep: a redrawn status line on a terminal, one plain
// line per finished trial otherwise (logs, CI).
#pragma once

#include "protocol/events.hpp"

#include <gpusweep/db/store.hpp>
#include <gpusweep/db/trial_status.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace gpusweep::host {

// A finished trial's line: "1.20k samples/s, cv 2.1%, accuracy 0.91", or
// its error.
std::string outcome_detail(const db::TrialOutcome& o);

class Progress {
 public:
  // long_phase_s: a trial's setup or warmup this long gets a line of its
  // own, and another each time it has lasted twice as long.
  Progress(size_t total, int jobs, bool terminal, std::FILE* out = stdout,
           double long_phase_s = 30);

  void started(int64_t trial_id, const std::string& label);
  void event(int64_t trial_id, const event::Event& event);
  void finished(int64_t trial_id, db::TrialStatus status, const std::string& detail);
  void done();
  // More trials to come (a round added by measure.precision).
  void grow(size_t trials) { total_ += trials; }
  // A line of its own between the trials' lines ("note: ...").
  void note(const std::string& text);

 private:
  struct Running {
    std::string label;
    Phase phase = Phase::start;
    int64_t block = 0;
    int64_t blocks = 0;
    std::chrono::steady_clock::time_point phase_since = std::chrono::steady_clock::now();
    double next_notice_s = 0;  // a long setup or warmup's next "still in" line
  };
  void redraw();
  // A worker's heartbeat: a long setup or warmup (loading, torch.compile)
  // says so as it goes, rather than nothing for minutes.
  void heartbeat(Running& r);
  std::string eta() const;

  size_t total_;
  int jobs_;
  bool terminal_;
  std::FILE* out_;
  size_t finished_ = 0;
  double finished_seconds_ = 0;
  std::map<int64_t, Running> running_;
  std::map<int64_t, std::chrono::steady_clock::time_point> started_at_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point drawn_ = t0_;
  double long_phase_s_;
};

}  // namespace gpusweep::host
