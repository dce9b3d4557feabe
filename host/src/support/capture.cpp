// The host's one subprocess capture; see capture.hpp.
#include "support/capture.hpp"

#include "support/spawn.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>

namespace gpusweep::host {

int Captured::exit_code() const {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Captured capture(const std::string& exe, const std::vector<std::string>& args,
                 const CaptureLimits& limits) {
  const SpawnedProcess p = spawn_process(exe, args);
  Captured c;
  std::string* sinks[3] = {&c.proto, &c.out, &c.err};
  const size_t caps[3] = {static_cast<size_t>(-1), limits.out, limits.err};
  pollfd fds[3] = {{p.proto_fd, POLLIN, 0}, {p.stdout_fd, POLLIN, 0}, {p.stderr_fd, POLLIN, 0}};
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(limits.timeout_s * 1000));
  char buf[65536];
  int open = 3;
  while (open > 0) {
    int wait_ms = -1;
    if (limits.timeout_s > 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        c.timed_out = true;
        ::kill(-p.pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(left);
    }
    if (::poll(fds, 3, wait_ms) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 3; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        std::string& sink = *sinks[i];
        if (sink.size() < caps[i]) {
          sink.append(buf, std::min(static_cast<size_t>(n), caps[i] - sink.size()));
        }
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (const auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  while (::waitpid(p.pid, &c.status, 0) < 0 && errno == EINTR) {
  }
  return c;
}

std::string find_on_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace gpusweep::host
