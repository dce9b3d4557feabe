// The worker's side of the protocol pipe: one JSON object per line, written
// whole (one writer at a time: the heartbeat thread shares the pipe). A
// worker whose host has gone away exits at once (code 70).
#pragma once

#include <nlohmann/json.hpp>

#include <cerrno>
#include <mutex>
#include <string>

#include <unistd.h>

namespace gpusweep::host {

class EventWriter {
 public:
  explicit EventWriter(int fd) : fd_(fd) {}
  void emit(const nlohmann::json& event) {
    std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line.push_back('\n');
    const std::lock_guard<std::mutex> hold(mutex_);
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) _exit(70);  // the host is gone; nobody to report to
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mutex_;
};

}  // namespace gpusweep::host
