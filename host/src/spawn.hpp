// Starting a worker process with posix_spawn: its own process group, stdin
// from /dev/null, stdout and stderr captured on pipes, and the protocol on a
// third pipe at fd 3 so that nothing a plugin prints can corrupt it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace gpusweep::host {

struct SpawnedProcess {
  pid_t pid = -1;
  int proto_fd = -1;   // read end of the protocol pipe (child's fd 3)
  int stdout_fd = -1;  // read end of the child's stdout
  int stderr_fd = -1;  // read end of the child's stderr
};

// Throws gpusweep::Error when the process cannot be started. The returned
// read ends are close-on-exec and owned by the caller.
SpawnedProcess spawn_process(const std::string& exe, const std::vector<std::string>& args,
                             const std::vector<std::string>& extra_env = {});

// This executable's absolute path (/proc/self/exe).
std::string self_executable();

// "SIGSEGV (segmentation fault)" for a signal number.
std::string signal_description(int sig);

}  // namespace gpusweep::host
