// Reading what Linux says about processes and the machine (/proc and
// friends). Parsers take the text, so that tests feed them simulated files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// The whole file as text (empty when it cannot be read).
std::string read_text(const std::string& path);

// This machine's host name, as gethostname gives it ("" when it has none).
std::string host_name();

// The shared libraries in the text of /proc/PID/maps, each path once, in
// order of first appearance.
std::vector<std::string> mapped_libraries(const std::string& maps);

struct CpuInfo {
  std::string model;
  int logical = 0;
  int physical = 0;  // distinct (physical id, core id) pairs; 0 when not listed
};
CpuInfo parse_cpuinfo(const std::string& cpuinfo);

// utime + stime in seconds from the text of /proc/PID/stat.
std::optional<double> parse_proc_stat_cpu_seconds(const std::string& stat, long ticks_per_second);
// VmRSS in bytes from the text of /proc/PID/status.
std::optional<double> parse_status_rss_bytes(const std::string& status);

// The files that may hold the kernel OOM killer's count for the memory
// cgroup in the text of /proc/self/cgroup, most specific first: cgroup v2's
// memory.events and v1's memory.oom_control, under the cgroup's path and at
// the mount's root (a container sees its own cgroup there).
std::vector<std::string> oom_kill_files(const std::string& proc_self_cgroup);

// N from the "oom_kill N" line of memory.events or memory.oom_control.
std::optional<int64_t> parse_oom_kill(const std::string& text);

// The OOM killer's kills so far in this process's memory cgroup (the one its
// children start in), or none where no cgroup file says.
std::optional<int64_t> cgroup_oom_kills();

}  // namespace gpusweep::host
