// What `gpusweep doctor` reads about the machine: the libraries a LibTorch
// process mapped (and which BLAS that is), the libblas.so.3 alternative, the
// CPU. Pure functions over text where possible, so that tests feed them
// simulated /proc contents.
#pragma once

#include <string>
#include <vector>

namespace gpusweep::host {

// The whole file as text (empty when it cannot be read).
std::string read_text(const std::string& path);

// The shared libraries in the text of /proc/PID/maps, each path once, in
// order of first appearance.
std::vector<std::string> mapped_libraries(const std::string& maps);

struct BlasVerdict {
  std::string name;      // "openblas-openmp", "openblas-pthread", "mkl", "blis", "reference", "unknown"
  std::string path;      // the mapped library it was read from
  bool slow = false;     // the unoptimised reference BLAS
  std::string warning;   // what to do about it (empty when fine)
};

// Which BLAS a process uses, from the libraries it mapped. alternative is
// where libblas.so.3 resolves on this machine (Debian's alternatives), used
// when a mapped path is the unresolved libblas.so.3.
BlasVerdict classify_blas(const std::vector<std::string>& libraries,
                          const std::string& alternative);

// Where /usr/lib/<multiarch>/libblas.so.3 resolves (empty when absent).
std::string blas_alternative();

struct CpuInfo {
  std::string model;
  int logical = 0;
  int physical = 0;  // distinct (physical id, core id) pairs; 0 when not listed
};
CpuInfo parse_cpuinfo(const std::string& cpuinfo);

}  // namespace gpusweep::host
