// What `gpusweep doctor` reads about the machine: the libraries a LibTorch
// process mapped (and which BLAS that is), the libblas.so.3 alternative, the
// CPU. Pure functions over text where possible, so that tests feed them
// simulated /proc contents.
#pragma once

#include "support/procfs.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpusweep::host {

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

// What the LibTorch build, the driver and the devices mean for a sweep.
struct CudaVerdict {
  std::string summary;                // one line: what device=auto does here, and why
  std::vector<std::string> warnings;  // numbers would mislead, or a feature is lost
  std::vector<std::string> problems;  // CUDA trials would fail
};

// Judges the LibTorch probe's runtime report (torchkit's runtime_info():
// cuda_build, cuda {torch_cuda, torch_cudnn, toolkit, driver_cuda}, devices)
// together with what NVML saw (nvml_gpus: -1 when NVML did not load).
CudaVerdict judge_cuda(const nlohmann::json& runtime, int nvml_gpus);

}  // namespace gpusweep::host
