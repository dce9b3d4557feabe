// posix_spawn wrapper; see spawn.hpp.
#include "support/spawn.hpp"

#include "support/error.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include <limits.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace gpusweep::host {

namespace {

// Both ends numbered >= 10 (close-on-exec), so that dup2 onto 1 to 4 in a
// child always really duplicates.
void renumber_above_9(const int raw[2], int fds[2]) {
  for (int i = 0; i < 2; ++i) {
    fds[i] = fcntl(raw[i], F_DUPFD_CLOEXEC, 10);
    ::close(raw[i]);
    if (fds[i] < 0) throw Error(std::string("fcntl: ") + std::strerror(errno));
  }
}

}  // namespace

void make_pipe(int fds[2]) {
  int raw[2];
  if (pipe2(raw, O_CLOEXEC) != 0) throw Error(std::string("pipe: ") + std::strerror(errno));
  renumber_above_9(raw, fds);
}

void make_gate(int fds[2]) {
  int raw[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, raw) != 0) {
    throw Error(std::string("socketpair: ") + std::strerror(errno));
  }
  renumber_above_9(raw, fds);
}

bool open_gate(int fd, double cap_s) {
  // 'g', or 'c' and the cap's 8 bytes: one send, so one message.
  char msg[1 + sizeof(double)] = {'g'};
  size_t len = 1;
  if (cap_s > 0) {
    msg[0] = 'c';
    std::memcpy(msg + 1, &cap_s, sizeof cap_s);
    len = sizeof msg;
  }
  ssize_t n;
  while ((n = ::send(fd, msg, len, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  return n == static_cast<ssize_t>(len);
}

pid_t spawn_with_fds(const std::string& exe, const std::vector<std::string>& args,
                     const std::vector<std::string>& extra_env,
                     const std::vector<std::pair<int, int>>& fds, bool own_group) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  for (int target : {1, 2}) {
    const bool given =
        std::any_of(fds.begin(), fds.end(), [target](const auto& f) { return f.first == target; });
    if (!given) posix_spawn_file_actions_addopen(&fa, target, "/dev/null", O_WRONLY, 0);
  }
  for (const auto& [target, source] : fds) posix_spawn_file_actions_adddup2(&fa, source, target);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : kChildDefaultSignals) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (own_group) {
    posix_spawnattr_setpgroup(&attr, 0);  // own group: Ctrl-C reaches the host only
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) env_store.emplace_back(*e);
  for (const auto& e : extra_env) env_store.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error("cannot start worker '" + exe + "': " + std::strerror(rc));
  return pid;
}

SpawnedProcess spawn_process(const std::string& exe, const std::vector<std::string>& args,
                             const std::vector<std::string>& extra_env, bool gated) {
  int proto[2], out[2], err[2], gate[2] = {-1, -1};
  make_pipe(proto);
  make_pipe(out);
  make_pipe(err);
  std::vector<std::pair<int, int>> fds = {{1, out[1]}, {2, err[1]}, {3, proto[1]}};
  pid_t pid = -1;
  try {
    if (gated) {
      make_gate(gate);
      fds.emplace_back(kGateFd, gate[1]);
    }
    pid = spawn_with_fds(exe, args, extra_env, fds);
  } catch (...) {
    for (int f : {proto[0], proto[1], out[0], out[1], err[0], err[1], gate[0], gate[1]}) {
      if (f >= 0) ::close(f);
    }
    throw;
  }
  for (int f : {proto[1], out[1], err[1], gate[1]}) {
    if (f >= 0) ::close(f);
  }
  return SpawnedProcess{pid, proto[0], out[0], err[0], gate[0]};
}

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot find this executable (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

std::string signal_description(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* desc = strsignal(sig);
  return std::string(abbrev != nullptr ? std::string("SIG") + abbrev
                                       : "signal " + std::to_string(sig)) +
         " (" + (desc != nullptr ? desc : "unknown") + ")";
}

}  // namespace gpusweep::host
