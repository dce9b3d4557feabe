// Reading what Linux says about processes and the machine (/proc and
// friends). Parsers take the text, so that tests feed them simulated files.
#pragma once

#include <string>
#include <vector>

namespace gpusweep::host {

// The whole file as text (empty when it cannot be read).
std::string read_text(const std::string& path);

// The shared libraries in the text of /proc/PID/maps, each path once, in
// order of first appearance.
std::vector<std::string> mapped_libraries(const std::string& maps);

struct CpuInfo {
  std::string model;
  int logical = 0;
  int physical = 0;  // distinct (physical id, core id) pairs; 0 when not listed
};
CpuInfo parse_cpuinfo(const std::string& cpuinfo);

}  // namespace gpusweep::host
