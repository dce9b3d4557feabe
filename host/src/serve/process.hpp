// What `gpusweep serve` does to its own process: an access token from the
// kernel's random source, a lower CPU and I/O priority than the sweeps it
// shows, and the stop signals taken by one thread that removes the local
// copies on the way out.
#pragma once

#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace gpusweep::host {

// 24 hex digits from the kernel's random source (Error when unreadable).
std::string random_token();

// The niceness serve runs at: a viewer gives way to the sweeps it shows
// (their trials and their commits) whenever they want the same core. At
// 10 it still gets about a tenth of a core taken by a trial, so a page on
// a machine whose every core trains goes on updating, a little later.
constexpr int kServeNice = 10;

// Lowers this thread's CPU priority (the threads it starts inherit it; on
// Linux niceness is per thread) to kServeNice, and its I/O priority to the
// lowest of the best-effort class. Says what it could not do ("" when
// both); never fails the server.
std::string yield_to_writers();

// SIGINT and SIGTERM blocked in this thread and the threads it starts, so
// that remove_on_stop's thread alone takes them.
sigset_t block_stop_signals();

// On Ctrl-C or SIGTERM: the folders `folders` names then are removed, then
// the process ends as the signal would have ended it (requests in flight
// are cut, as they were).
void remove_on_stop(const sigset_t& stop, std::function<std::vector<std::string>()> folders);

}  // namespace gpusweep::host
