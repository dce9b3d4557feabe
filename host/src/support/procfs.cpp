// /proc readers and parsers; see procfs.hpp.
#include "support/procfs.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace gpusweep::host {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> mapped_libraries(const std::string& maps) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  std::istringstream in(maps);
  for (std::string line; std::getline(in, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (const auto deleted = path.find(" (deleted)"); deleted != std::string::npos) {
      path.erase(deleted);
    }
    const std::string file = path.substr(path.rfind('/') + 1);
    if (file.find(".so") == std::string::npos) continue;
    if (seen.insert(path).second) out.push_back(path);
  }
  return out;
}

CpuInfo parse_cpuinfo(const std::string& cpuinfo) {
  CpuInfo c;
  std::set<std::pair<std::string, std::string>> cores;
  std::string physical_id = "0";
  std::istringstream in(cpuinfo);
  auto value = [](const std::string& line) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) return std::string();
    const auto b = line.find_first_not_of(" \t", colon + 1);
    return b == std::string::npos ? std::string() : line.substr(b);
  };
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("processor", 0) == 0) {
      ++c.logical;
    } else if (line.rfind("model name", 0) == 0 && c.model.empty()) {
      c.model = value(line);
    } else if (line.rfind("physical id", 0) == 0) {
      physical_id = value(line);
    } else if (line.rfind("core id", 0) == 0) {
      cores.emplace(physical_id, value(line));
    }
  }
  c.physical = static_cast<int>(cores.size());
  return c;
}

}  // namespace gpusweep::host
