// /proc readers and parsers; see procfs.hpp.
#include "support/procfs.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace gpusweep::host {

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

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

std::vector<std::string> oom_kill_files(const std::string& proc_self_cgroup) {
  std::vector<std::string> files;
  std::istringstream in(proc_self_cgroup);
  for (std::string line; std::getline(in, line);) {
    // "hierarchy-id:controllers:path"; v2 has id 0 and no controllers.
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (path == "/") path.clear();
    if (controllers.empty()) {
      files.push_back("/sys/fs/cgroup" + path + "/memory.events");
      if (!path.empty()) files.push_back("/sys/fs/cgroup/memory.events");
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      files.push_back("/sys/fs/cgroup/memory" + path + "/memory.oom_control");
      if (!path.empty()) files.push_back("/sys/fs/cgroup/memory/memory.oom_control");
    }
  }
  // v1's memory controller first: on a hybrid machine it is the one that kills.
  std::stable_partition(files.begin(), files.end(), [](const std::string& f) {
    return f.find("oom_control") != std::string::npos;
  });
  return files;
}

std::optional<int64_t> parse_oom_kill(const std::string& text) {
  std::istringstream in(text);
  for (std::string key; in >> key;) {
    long long n = 0;
    if (!(in >> n)) return std::nullopt;
    if (key == "oom_kill") return n;
  }
  return std::nullopt;
}

std::optional<int64_t> cgroup_oom_kills() {
  for (const std::string& file : oom_kill_files(read_text("/proc/self/cgroup"))) {
    if (auto n = parse_oom_kill(read_text(file))) return n;
  }
  return std::nullopt;
}

std::optional<double> parse_proc_stat_cpu_seconds(const std::string& stat, long ticks_per_second) {
  // The command name (field 2) may hold spaces and parentheses: fields are
  // counted from the last ')'. utime and stime are fields 14 and 15.
  const auto close = stat.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15; ++i) {
    if (!(in >> field)) return std::nullopt;
    try {
      if (i == 14) utime = std::stod(field);
      if (i == 15) stime = std::stod(field);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return (utime + stime) / static_cast<double>(ticks_per_second);
}

std::optional<double> parse_status_rss_bytes(const std::string& status) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    double kib = 0;
    if (fields >> kib) return kib * 1024.0;
  }
  return std::nullopt;
}

}  // namespace gpusweep::host
