// The host's side of the fork server, and the datagram helpers both sides
// use; see fork_server.hpp. The server's side is run_fork_server (worker.cpp).
#include "fork_server.hpp"

#include "error.hpp"

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

// Requests carry a trial's resolved config: far below this.
constexpr size_t kMaxMessage = 1 << 20;
constexpr int kMaxFds = 3;
constexpr int kReadyTimeoutMs = 120'000;  // loading LibTorch from a cold disk
constexpr int kReplyTimeoutMs = 30'000;

[[noreturn]] void fail(const std::string& what) {
  throw Error("fork server: " + what);
}

}  // namespace

bool send_message(int fd, const std::string& text, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxFds)> control{};
  if (!fds.empty()) {
    if (fds.size() > static_cast<size_t>(kMaxFds)) return false;
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(text.size());
  }
}

bool recv_message(int fd, std::string& text, std::vector<int>& fds, int timeout_ms) {
  fds.clear();
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    break;
  }
  // Reused, and never zeroed: a fresh megabyte a message cost more than
  // the fork.
  static thread_local std::unique_ptr<char[]> buf(new char[kMaxMessage]);
  iovec iov{buf.get(), kMaxMessage};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kMaxFds)> control{};
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const auto* data = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (size_t i = 0; i < count; ++i) fds.push_back(data[i]);
  }
  if (n <= 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    for (int f : fds) ::close(f);
    fds.clear();
    return false;
  }
  text.assign(buf.get(), static_cast<size_t>(n));
  return true;
}

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
    pid_ = spawn_in_own_group(exe, {"worker", "--plugin", plugin_path, "--serve", "3"},
                              {"GPUSWEEP_WORKER=1"}, {{3, child_end}});
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

SpawnedProcess ForkServer::spawn(const std::vector<std::string>& worker_args) {
  if (fd_ < 0) fail("not running");
  int proto[2], out[2], err[2];
  make_pipe(proto);
  make_pipe(out);
  make_pipe(err);
  const bool sent = send_message(fd_, Json(worker_args).dump(), {proto[1], out[1], err[1]});
  ::close(proto[1]);
  ::close(out[1]);
  ::close(err[1]);
  std::string text;
  std::vector<int> fds;
  Json reply;
  if (sent && recv_message(fd_, text, fds, kReplyTimeoutMs)) {
    reply = Json::parse(text, nullptr, false);
  }
  for (int f : fds) ::close(f);
  if (!reply.is_object() || !reply.contains("pid")) {
    ::close(proto[0]);
    ::close(out[0]);
    ::close(err[0]);
    if (!sent || !reply.is_object()) {
      // The server is gone or confused: no more requests to it.
      ::close(fd_);
      fd_ = -1;
    }
    fail(reply.is_object() && reply.contains("error") ? reply["error"].get<std::string>()
                                                      : std::string("no answer"));
  }
  return SpawnedProcess{reply["pid"].get<pid_t>(), proto[0], out[0], err[0]};
}

}  // namespace gpusweep::host
