// `gpusweep worker`: runs one trial (or describes a plugin) inside its own
// process and streams JSON-line events to the host over a dedicated pipe.
#pragma once

#include <string>

namespace gpusweep::host {

struct WorkerArgs {
  std::string plugin_path;
  int proto_fd = 3;
  bool describe = false;      // only load and report manifest + runtime
  std::string config_json;    // resolved trial config
  std::string measure_json;   // MeasureSpec::to_json()
};

// Never returns normally for a trial: the process ends with _exit so that a
// LibTorch plugin is never unloaded. Returns an exit code for argument errors.
int run_worker(const WorkerArgs& args);

// Map a plugin status to a trial status name.
const char* status_name(int status);

}  // namespace gpusweep::host
