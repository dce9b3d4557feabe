// The fork server's messages (run/fork_server.hpp has the protocol): one
// datagram on a SOCK_SEQPACKET socket, JSON text with descriptors attached.
// Both processes use them: the host's ForkServer and the worker's server loop.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace gpusweep::host {

// Requests carry a trial's resolved config: far below this.
constexpr size_t kMaxMessage = 1 << 20;
constexpr int kMaxFds = 4;

// One datagram of the protocol, with descriptors attached. send_message
// returns false when the peer is gone. recv_message returns false on end of
// file or after timeout_ms (< 0: wait forever); received descriptors are
// close-on-exec and the caller's to close.
bool send_message(int fd, const std::string& text, const std::vector<int>& fds = {});
bool recv_message(int fd, std::string& text, std::vector<int>& fds, int timeout_ms = -1);

}  // namespace gpusweep::host
