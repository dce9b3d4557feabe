// What the benchmarks that talk to `gpusweep serve` share: starting one on a
// free port, a plain HTTP/1.0 GET on loopback, and an answer's cursor.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>

namespace gpusweep::bench {

// The access token the benchmarks' servers are started with.
inline const char* const kServeToken = "gpusweep-bench-token-0000";

// GET target from 127.0.0.1:port; the body, or "" when nothing answered 200.
inline std::string get(uint16_t port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string text;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "GET " + target +
                            " HTTP/1.0\r\nHost: 127.0.0.1:" + std::to_string(port) +
                            "\r\nAuthorization: Bearer " + kServeToken + "\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
        text.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (text.rfind("HTTP/1.1 200", 0) != 0 && text.rfind("HTTP/1.0 200", 0) != 0) return "";
  const auto body = text.find("\r\n\r\n");
  return body == std::string::npos ? "" : text.substr(body + 4);
}

// The cursor an answer of /api/run carries ("" when none).
inline std::string cursor_of(const std::string& body) {
  const std::string key = "\"cursor\":\"";
  const auto at = body.find(key);
  if (at == std::string::npos) return "";
  const auto end = body.find('"', at + key.size());
  return end == std::string::npos ? "" : body.substr(at + key.size(), end - at - key.size());
}

// Starts `bin serve --db path --port 0` with its output in `log`; its pid,
// and in *port the port it took (0 when it did not say within 10 s).
inline pid_t start_server(const std::string& bin, const std::string& path, const std::string& log,
                          uint16_t* port) {
  const pid_t server = fork();
  if (server == 0) {
    const std::string cmd = "exec '" + bin + "' serve --db '" + path + "' --port 0 --token " +
                            kServeToken + " > '" + log + "' 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  *port = 0;
  for (int i = 0; i < 400 && *port == 0; ++i) {
    std::ifstream in(log);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    if (std::regex_search(text, m, std::regex(":(\\d+)/")))
      *port = static_cast<uint16_t>(std::stoi(m[1]));
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return server;
}

}  // namespace gpusweep::bench
