// The gate an interleaved trial waits at for its turns; see gate.hpp.
#include "worker/gate.hpp"

#include "protocol/event_payloads.hpp"
#include "protocol/event_writer.hpp"
#include "worker/worker.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace gpusweep::host::detail {

Gate::Gate(int fd, EventWriter& out) : fd_(fd), out_(out) {
  if (fd_ >= 0) {
    // Out of the plugin's way, as the protocol is.
    const int moved = ::fcntl(fd_, F_DUPFD_CLOEXEC, 100);
    if (moved >= 0) {
      ::close(fd_);
      fd_ = moved;
    }
  }
}

void Gate::await_turn(bool unmeasured) {
  if (fd_ < 0) return;
  out_.emit(event::Await{turn_++, unmeasured}.to_json());
  char go = 0;
  ssize_t n;
  while ((n = ::read(fd_, &go, 1)) < 0 && errno == EINTR) {
  }
  // The host closed the gate: it is ending this trial (Ctrl-C, a
  // failure), and kills it next; nothing more may run.
  if (n != 1) finish(0);
  if (go == 'c') {
    char bytes[sizeof(double)];
    size_t got = 0;
    while (got < sizeof bytes) {
      const ssize_t r = ::read(fd_, bytes + got, sizeof bytes - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) finish(0);
      got += static_cast<size_t>(r);
    }
    std::memcpy(&cap_s_, bytes, sizeof cap_s_);
  }
}

}  // namespace gpusweep::host::detail
