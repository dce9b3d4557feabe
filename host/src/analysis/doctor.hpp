// What `gpusweep doctor` reads about the machine: the libraries a LibTorch
// process mapped (and which BLAS that is), the libblas.so.3 alternative, the
// CPU. Pure functions over text where possible, so that tests feed them
// simulated /proc contents.
#pragma once

#include "spec/manifest.hpp"
#include "support/procfs.hpp"

#include <gpusweep/runtime_info.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpusweep::host {

struct BlasVerdict {
  std::string name;  // "openblas-openmp", "openblas-pthread", "mkl", "blis", "reference", "unknown"
  std::string path;  // the mapped library it was read from
  bool slow = false;    // the unoptimised reference BLAS
  std::string warning;  // what to do about it (empty when fine)
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
CudaVerdict judge_cuda(const RuntimeInfo& runtime, int nvml_gpus);

// What doctor found: its JSON document (machine, plugins, plugin_path,
// libtorch, cuda, warnings, problems, ready) as the checks fill it in.
struct DoctorFindings {
  Json doc = Json::object();
  std::vector<std::string> warnings;  // numbers would mislead: exit 0
  std::vector<std::string> problems;  // a sweep would fail: exit 1

  // Writes warnings, problems and ready into doc, and returns it.
  const Json& finish();
};

// The machine section: the CPU (or the architecture when /proc/cpuinfo names
// none), its cores and the kernel.
void record_machine(DoctorFindings& f, const CpuInfo& cpu, const std::string& arch,
                    const std::string& kernel, int hardware_threads);

// The libtorch section from the runtime report of the plugin that runs on
// LibTorch (plugin empty: none loads) and its probe worker's report (null,
// with probe_error, when the probe failed): version, build, threads (and
// advice when LibTorch uses fewer threads than the machine has cores), the
// BLAS it mapped or linked, OpenMP, the matmul peak.
void judge_libtorch(DoctorFindings& f, const std::string& plugin, const RuntimeInfo& runtime,
                    const Json& probe, const std::string& probe_error, double matmul_s,
                    const CpuInfo& cpu, const std::string& blas_alternative);

// The cuda section: the toolkit, driver and devices LibTorch saw, NVML's view
// (nvml: {loaded, library, driver_version} or {loaded: false, why}, and its
// devices; nvml_gpus -1 when it did not load) and, when LibTorch was probed,
// judge_cuda's verdict.
void judge_cuda_section(DoctorFindings& f, const RuntimeInfo& runtime, bool probed,
                        const Json& nvml, const Json& nvml_devices, int nvml_gpus);

// The python section: the interpreter the Python and script workloads embed
// (interpreter: the plugin's python_interpreter, "" when no Python plugin
// loads) and its probe (probe_python: null, with probe_error, when it did not
// run). Its torch must be the LibTorch the plugins load (runtime's
// torch_library, or the same version and CUDA build), or the embedded import
// mixes two builds in one process; the training libraries it has are listed.
void judge_python(DoctorFindings& f, const std::string& interpreter, const Json& probe,
                  const std::string& probe_error, const RuntimeInfo& runtime);

}  // namespace gpusweep::host
