// The host's side of the fork server; see fork_server.hpp. The server's side
// is run_fork_server (worker/fork_server.cpp).
#include "run/fork_server.hpp"

#include "protocol/fork_messages.hpp"

#include "support/error.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>

namespace gpusweep::host {

namespace {

using Json = nlohmann::json;

constexpr int kReadyTimeoutMs = 120'000;  // loading LibTorch from a cold disk
constexpr int kReplyTimeoutMs = 30'000;

[[noreturn]] void fail(const std::string& what) { throw Error("fork server: " + what); }

}  // namespace

void become_subreaper() {
  static const bool done = [] {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    return true;
  }();
  (void)done;
}

ForkServer::ForkServer(const std::string& exe, const std::string& plugin_path) {
  become_subreaper();
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    fail(std::string("socketpair: ") + std::strerror(errno));
  }
  fd_ = pair[0];
  // The server's end at fd 3 (moved above 10 first, so that the dup2 onto 3
  // is never a no-op that keeps CLOEXEC); its stdout and stderr go nowhere
  // (what a plugin prints while loading belongs to no trial).
  const int child_end = ::fcntl(pair[1], F_DUPFD_CLOEXEC, 10);
  ::close(pair[1]);
  try {
    if (child_end < 0) throw Error(std::string("fcntl: ") + std::strerror(errno));
    WorkerArgs server;
    server.mode = WorkerMode::serve;
    server.plugin_path = plugin_path;
    server.serve_fd = 3;
    pid_ = spawn_with_fds(exe, server.to_argv(), {}, {{3, child_end}});
  } catch (const std::exception& e) {
    if (child_end >= 0) ::close(child_end);
    shutdown();
    fail(e.what());
  }
  ::close(child_end);
  std::string text;
  std::vector<int> fds;
  Json ready;
  if (recv_message(fd_, text, fds, kReadyTimeoutMs)) ready = Json::parse(text, nullptr, false);
  if (!ready.is_object() || !ready.value("ready", false)) {
    const std::string why = ready.is_object() && ready.contains("error")
                                ? ready["error"].get<std::string>()
                                : std::string("it did not report ready");
    shutdown();
    fail(why);
  }
}

ForkServer::~ForkServer() { shutdown(); }

void ForkServer::shutdown() {
  if (fd_ >= 0) ::close(fd_);  // end of file: the server exits
  fd_ = -1;
  if (pid_ > 0) {
    // It exits at once on end of file; a server stuck in a plugin's
    // static code is killed.
    for (int i = 0; i < 200; ++i) {
      const pid_t r = ::waitpid(pid_, nullptr, WNOHANG);
      if (r == pid_ || (r < 0 && errno == ECHILD)) {
        pid_ = -1;
        return;
      }
      ::usleep(5000);
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

SpawnedProcess ForkServer::spawn(const WorkerArgs& worker) {
  const std::vector<std::string> request = worker.to_argv();
  if (fd_ < 0) fail("not running");
  int proto[2], out[2], err[2], gate[2] = {-1, -1};
  make_pipe(proto);
  make_pipe(out);
  make_pipe(err);
  std::vector<int> sent_fds = {proto[1], out[1], err[1]};
  if (worker.gate_fd >= 0) {
    make_gate(gate);
    sent_fds.push_back(gate[1]);
  }
  const bool sent = send_message(fd_, Json(request).dump(), sent_fds);
  for (int f : sent_fds) ::close(f);
  std::string text;
  std::vector<int> fds;
  Json reply;
  if (sent && recv_message(fd_, text, fds, kReplyTimeoutMs)) {
    reply = Json::parse(text, nullptr, false);
  }
  for (int f : fds) ::close(f);
  if (!reply.is_object() || !reply.contains("pid")) {
    for (int f : {proto[0], out[0], err[0], gate[0]}) {
      if (f >= 0) ::close(f);
    }
    if (!sent || !reply.is_object()) {
      // The server is gone or confused: no more requests to it.
      ::close(fd_);
      fd_ = -1;
    }
    fail(reply.is_object() && reply.contains("error") ? reply["error"].get<std::string>()
                                                      : std::string("no answer"));
  }
  return SpawnedProcess{reply["pid"].get<pid_t>(), proto[0], out[0], err[0], gate[0]};
}

}  // namespace gpusweep::host
