// Machine facts for `gpusweep doctor`; see doctor.hpp.
#include "doctor.hpp"

#include <sys/utsname.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace gpusweep::host {

namespace {

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string file_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The BLAS a library path is, or "" when it is none.
std::string blas_of(const std::string& path) {
  const std::string file = file_name(path);
  if (contains(file, "libmkl")) return "mkl";
  if (contains(path, "openblas-openmp")) return "openblas-openmp";
  if (contains(path, "openblas-pthread")) return "openblas-pthread";
  if (contains(path, "openblas-serial")) return "openblas-serial";
  if (contains(file, "libopenblas")) return "openblas";
  if (contains(path, "/blis") || contains(file, "libblis")) return "blis";
  if (contains(path, "/atlas/") || contains(file, "libatlas")) return "atlas";
  if (file.rfind("libblas.so", 0) == 0) {
    // Debian's reference BLAS lives in .../blas/libblas.so.3; the optimised
    // ones register their own folder (openblas-pthread/libblas.so.3).
    if (contains(path, "/blas/")) return "reference";
    return "libblas";
  }
  return "";
}

}  // namespace

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
    const std::string file = file_name(path);
    if (file.find(".so") == std::string::npos) continue;
    if (seen.insert(path).second) out.push_back(path);
  }
  return out;
}

BlasVerdict classify_blas(const std::vector<std::string>& libraries,
                          const std::string& alternative) {
  BlasVerdict v;
  v.name = "unknown";
  BlasVerdict reference;
  for (const auto& lib : libraries) {
    std::string kind = blas_of(lib);
    std::string path = lib;
    if (kind == "libblas" && !alternative.empty()) {
      // An unresolved libblas.so.3: what the alternative points at.
      kind = blas_of(alternative);
      path = alternative;
      if (kind == "libblas") kind = "reference";
    }
    if (kind.empty()) continue;
    if (kind == "reference" || kind == "libblas") {
      reference.name = "reference";
      reference.path = path;
      continue;
    }
    // An optimised BLAS wins over a reference one mapped beside it.
    v.name = kind;
    v.path = path;
    return v;
  }
  if (!reference.path.empty()) {
    v = reference;
    v.slow = true;
    v.warning =
        "LibTorch uses Debian's reference BLAS (" + v.path +
        "): unoptimised netlib code, 10-50x slower on matmul and convolutions than an "
        "optimised BLAS, so every CPU number would mostly measure it. Fix: apt-get install "
        "libopenblas0-openmp (it becomes the libblas.so.3 alternative; check with "
        "update-alternatives --display libblas.so.3-$(gcc -print-multiarch))";
  }
  return v;
}

std::string blas_alternative() {
  utsname u{};
  ::uname(&u);
  const std::string machine = u.machine;
  const std::string multiarch = machine == "x86_64"    ? "x86_64-linux-gnu"
                                : machine == "aarch64" ? "aarch64-linux-gnu"
                                                       : machine + "-linux-gnu";
  std::error_code ec;
  const auto resolved =
      std::filesystem::canonical("/usr/lib/" + multiarch + "/libblas.so.3", ec);
  return ec ? std::string() : resolved.string();
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
