// Starting a worker process with posix_spawn: its own process group, stdin
// from /dev/null, stdout and stderr captured on pipes, and the protocol on a
// third pipe at fd 3 so that nothing a plugin prints can corrupt it.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

struct SpawnedProcess {
  pid_t pid = -1;
  int proto_fd = -1;   // read end of the protocol pipe (child's fd 3)
  int stdout_fd = -1;  // read end of the child's stdout
  int stderr_fd = -1;  // read end of the child's stderr
  int gate_fd = -1;    // gated: the host's end of the child's gate (open_gate); else -1
};

// The child's descriptor for the gate of interleaved execution (worker
// option --gate-fd).
inline constexpr int kGateFd = 4;

// Throws gpusweep::Error when the process cannot be started. The returned
// descriptors are close-on-exec and owned by the caller. gated: the child
// gets a gate at kGateFd.
SpawnedProcess spawn_process(const std::string& exe, const std::vector<std::string>& args,
                             const std::vector<std::string>& extra_env = {}, bool gated = false);

// A socket pair for a gate (a socket, not a pipe, so that opening the gate
// of a child that died is an error and not a SIGPIPE); both ends
// close-on-exec and numbered >= 10. Throws gpusweep::Error.
void make_gate(int fds[2]);

// Lets the child at the other end of a gate take its turn: the byte 'g';
// with cap_s > 0, 'c' and cap_s's 8 bytes (a measure.target trial's
// adaptive cap: the training seconds after which it stops, censored).
// False when the child is gone.
bool open_gate(int fd, double cap_s = 0);

// A pipe whose ends are close-on-exec and numbered >= 10, so that dup2 onto
// 1, 2 or 3 in a child always really duplicates (and clears CLOEXEC).
// Throws gpusweep::Error.
void make_pipe(int fds[2]);

// posix_spawn of exe with args (argv[0] is exe) in a process group of its
// own (or, with own_group false, in this process's: a data-parallel trial's
// ranks, killed with it as one), with an empty signal mask and default
// dispositions, the environment plus extra_env, stdin from /dev/null, each
// (child fd, parent fd) of fds duplicated in, and stdout or stderr not among
// them on /dev/null. Throws gpusweep::Error when it cannot start.
pid_t spawn_with_fds(const std::string& exe, const std::vector<std::string>& args,
                     const std::vector<std::string>& extra_env,
                     const std::vector<std::pair<int, int>>& fds, bool own_group = true);

// The signals a child process gets back at their default disposition (the
// host catches or ignores them): spawned children and the fork server's.
inline constexpr int kChildDefaultSignals[] = {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP, SIGQUIT};

// This executable's absolute path (/proc/self/exe).
std::string self_executable();

// "SIGSEGV (segmentation fault)" for a signal number.
std::string signal_description(int sig);

}  // namespace gpusweep::host
