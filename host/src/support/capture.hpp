// Running a program to completion and keeping what it printed: the one
// subprocess capture of the host (a worker's protocol, stdout and stderr for
// `plugins --check`, `doctor` and the registry; Slurm's client commands).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpusweep::host {

struct Captured {
  std::string proto;  // the protocol pipe (the child's fd 3): JSON-line events
  std::string out;    // stdout, up to CaptureLimits::out bytes
  std::string err;    // stderr, up to CaptureLimits::err bytes
  int status = 0;     // as from waitpid
  bool timed_out = false;

  // The shell's view of status: the exit code, or 128 + the signal.
  int exit_code() const;
};

struct CaptureLimits {
  double timeout_s = 0;  // > 0: the process group is killed after this long
  size_t out = static_cast<size_t>(-1);
  size_t err = static_cast<size_t>(-1);
};

// Starts exe with args in its own process group (spawn.hpp) and reads its
// three pipes until they close or the time is up, then reaps it. Reads and
// waits are retried on EINTR. Throws gpusweep::Error when it cannot start.
Captured capture(const std::string& exe, const std::vector<std::string>& args,
                 const CaptureLimits& limits = {});

// The absolute path of `name` on PATH ("" when it is not there).
std::string find_on_path(const std::string& name);

}  // namespace gpusweep::host
