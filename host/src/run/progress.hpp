// Progress of a running sweep: a redrawn status line on a terminal, one plain
// line per finished trial otherwise (logs, CI).
#pragma once

#include <gpusweep/db/trial_status.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace gpusweep::host {

class Progress {
 public:
  Progress(size_t total, int jobs, bool terminal, std::FILE* out = stdout);

  void started(int64_t trial_id, const std::string& label);
  void event(int64_t trial_id, const nlohmann::json& event);
  void finished(int64_t trial_id, db::TrialStatus status, const std::string& detail);
  void done();
  // More trials to come (a round added by measure.precision).
  void grow(size_t trials) { total_ += trials; }
  // A line of its own between the trials' lines ("note: ...").
  void note(const std::string& text);

 private:
  struct Running {
    std::string label;
    std::string phase = "start";
    int64_t block = 0;
    int64_t blocks = 0;
  };
  void redraw();
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
};

}  // namespace gpusweep::host
