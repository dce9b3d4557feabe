// What `gpusweep serve` does to its own process; see process.hpp.
#include "serve/process.hpp"

#include "support/error.hpp"

#include <pthread.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpusweep::host {

std::string random_token() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[12] = {};
  in.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  if (!in) throw Error("cannot read /dev/urandom for an access token; give one with --token");
  std::string out;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out;
}

std::string yield_to_writers() {
  std::string note;
  errno = 0;
  if (::setpriority(PRIO_PROCESS, 0, kServeNice) != 0) {
    note += " (could not lower its CPU priority: " + std::string(std::strerror(errno)) + ")";
  }
#if defined(SYS_ioprio_set)
  constexpr int kWhoProcess = 1, kClassBestEffort = 2, kClassShift = 13, kLowest = 7;
  if (::syscall(SYS_ioprio_set, kWhoProcess, 0, (kClassBestEffort << kClassShift) | kLowest) != 0) {
    note += " (could not lower its I/O priority: " + std::string(std::strerror(errno)) + ")";
  }
#endif
  return note;
}

sigset_t block_stop_signals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  return stop;
}

void remove_on_stop(const sigset_t& stop, std::function<std::vector<std::string>()> folders) {
  std::thread([stop, folders = std::move(folders)] {
    int sig = 0;
    sigwait(&stop, &sig);
    std::error_code ec;
    for (const auto& f : folders()) std::filesystem::remove_all(f, ec);
    std::_Exit(128 + sig);
  }).detach();
}

}  // namespace gpusweep::host
