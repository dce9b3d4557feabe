// Machine facts for `gpusweep doctor`; see doctor.hpp.
#include "analysis/doctor.hpp"

#include "support/procfs.hpp"

#include <gpusweep/common_settings.hpp>

#include <sys/utsname.h>

#include <cctype>
#include <cstdlib>
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
        "optimised BLAS, so every CPU number would mostly measure it (a LibTorch linked "
        "against the system BLAS, such as Debian's libtorch-dev; the torch wheel carries MKL). "
        "Fix: build against the torch wheel (scripts/install-deps.sh), or apt-get install "
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
  const auto resolved = std::filesystem::canonical("/usr/lib/" + multiarch + "/libblas.so.3", ec);
  return ec ? std::string() : resolved.string();
}

namespace {

struct Version {
  int major = -1;
  int minor = 0;
  bool known() const { return major >= 0; }
};

Version parse_version(const std::string& text) {
  Version v;
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0])) == 0) return v;
  v.major = std::atoi(text.c_str());
  const auto dot = text.find('.');
  if (dot != std::string::npos) v.minor = std::atoi(text.c_str() + dot + 1);
  return v;
}

bool older(const Version& a, const Version& b) {
  return a.major < b.major || (a.major == b.major && a.minor < b.minor);
}

// "CUDA-only settings (precision=fp16, tf32, ...) are skipped ...", the
// settings from their table.
std::string cuda_only() {
  return "CUDA-only settings (" + cuda_only_settings_text() +
         ") are skipped with the reason, and trials record no GPU figures";
}

}  // namespace

CudaVerdict judge_cuda(const RuntimeInfo& runtime, int nvml_gpus) {
  CudaVerdict v;
  const auto cuda = runtime.cuda.value_or(RuntimeCuda{});
  const bool cuda_build = runtime.cuda_build.value_or(false);
  const std::string built_for = cuda.torch_cuda.value_or("");
  const std::string driver = cuda.driver_cuda.value_or("");
  const std::string toolkit = cuda.toolkit.value_or("");
  const auto devices = runtime.devices.value_or(nlohmann::json::array());
  if (!cuda_build) {
    v.summary =
        "LibTorch here is a CPU-only build: device=cuda trials are skipped and "
        "device=auto runs on the CPU; " +
        cuda_only();
    if (nvml_gpus > 0) {
      v.warnings.push_back(
          "NVML sees " + std::to_string(nvml_gpus) +
          " GPU(s) but the plugins were built against "
          "a CPU-only LibTorch, so no trial can use them: build against a CUDA LibTorch "
          "(scripts/install-deps.sh installs the torch wheel; rebuild with scripts/build.sh)");
    }
    return v;
  }
  const Version b = parse_version(built_for);
  const Version t = parse_version(toolkit);
  if (b.known() && t.known() && b.major != t.major) {
    v.warnings.push_back("the plugins were compiled against CUDA toolkit " + toolkit +
                         " headers but LibTorch was built for CUDA " + built_for +
                         ": use a toolkit of the same major version (CUDAToolkit_ROOT)");
  }
  if (driver.empty()) {
    v.summary = "no NVIDIA driver, no GPU: LibTorch is a CUDA " + built_for +
                " build, but device=auto trials run on the CPU and device=cuda trials are "
                "skipped; " +
                cuda_only();
    return v;
  }
  const Version d = parse_version(driver);
  if (b.known() && d.known() && d.major < b.major) {
    v.problems.push_back(
        "LibTorch was built for CUDA " + built_for + " but the NVIDIA driver supports CUDA " +
        driver +
        " at most: CUDA cannot start and every GPU trial fails. Fix: install a driver "
        "for CUDA " +
        std::to_string(b.major) + ".x, or a torch built for CUDA " + std::to_string(d.major) +
        ".x (scripts/install-deps.sh pins the wheel)");
  } else if (b.known() && d.known() && older(d, b)) {
    v.warnings.push_back(
        "LibTorch was built for CUDA " + built_for + " and the driver supports CUDA " + driver +
        ": it runs under CUDA's minor-version compatibility, but kernels compiled at run time "
        "from PTX can fail; update the driver to one for CUDA " +
        built_for + " or newer");
  }
  if (devices.empty()) {
    v.summary = "driver for CUDA " + driver +
                ", but LibTorch sees no device (CUDA_VISIBLE_DEVICES "
                "empty, or no GPU): device=auto trials run on the CPU";
    if (nvml_gpus > 0) v.warnings.push_back("NVML sees GPUs but LibTorch sees none");
    return v;
  }
  v.summary = std::to_string(devices.size()) +
              " CUDA device(s) visible: device=auto runs on "
              "cuda:0 (" +
              devices.front().value("name", "?") + ")";
  return v;
}

const Json& DoctorFindings::finish() {
  doc["warnings"] = warnings;
  doc["problems"] = problems;
  doc["ready"] = problems.empty();
  return doc;
}

void record_machine(DoctorFindings& f, const CpuInfo& cpu, const std::string& arch,
                    const std::string& kernel, int hardware_threads) {
  f.doc["machine"] = {{"cpu", cpu.model.empty() ? "unknown (" + arch + ")" : cpu.model},
                      {"logical_cores", cpu.logical > 0 ? cpu.logical : hardware_threads},
                      {"physical_cores", cpu.physical},
                      {"kernel", kernel}};
}

void judge_libtorch(DoctorFindings& f, const std::string& plugin, const RuntimeInfo& runtime,
                    const Json& probe, const std::string& probe_error, double matmul_s,
                    const CpuInfo& cpu, const std::string& blas_alternative) {
  Json lt = Json::object();
  if (plugin.empty()) {
    lt["probed"] = false;
    lt["status"] = "no LibTorch plugin loads, so LibTorch was not probed";
    f.problems.push_back("no LibTorch plugin loads: nothing can be swept");
    f.doc["libtorch"] = lt;
    return;
  }
  const auto cuda = runtime.cuda.value_or(RuntimeCuda{});
  lt["probed"] = true;
  lt["plugin"] = plugin;
  lt["version"] = runtime.torch_version.value_or("");
  lt["cuda_build"] = runtime.cuda_build.value_or(false);
  lt["cuda"] = cuda.torch_cuda.value_or("");
  lt["cudnn"] = cuda.torch_cudnn.value_or("");
  lt["library"] = runtime.torch_library.value_or("");
  lt["cpu_capability"] = runtime.cpu_capability.value_or("");
  const int threads = static_cast<int>(runtime.threads.value_or(0));
  lt["threads"] = threads;
  lt["interop_threads"] = runtime.interop_threads.value_or(0);
  if (cpu.logical > 0 && threads > 0 && threads < cpu.logical) {
    lt["threads_advice"] = "LibTorch's default uses " + std::to_string(threads) + " of the " +
                           std::to_string(cpu.logical) +
                           " logical cores here; sweep `threads` "
                           "(e.g. \"threads\": [" +
                           std::to_string(threads) + ", " + std::to_string(cpu.logical) +
                           "]) to see whether more help";
  }
  if (probe.is_null()) {
    lt["probe_error"] = probe_error;
    f.problems.push_back("LibTorch probe failed: " + probe_error);
    f.doc["libtorch"] = lt;
    return;
  }
  const auto libs = probe.value("libraries", std::vector<std::string>{});
  BlasVerdict blas = classify_blas(libs, blas_alternative);
  const std::string linked = runtime.blas.value_or("");
  if (blas.name == "unknown" && !linked.empty() && linked != "unknown") {
    // No BLAS library mapped: the torch wheel links MKL into libtorch_cpu.
    blas.name = linked;
    blas.path = "linked into " + runtime.torch_library.value_or("LibTorch");
  }
  lt["blas"] = {{"name", blas.name},
                {"path", blas.path},
                {"slow", blas.slow},
                {"alternative", blas_alternative}};
  if (!blas.warning.empty()) f.warnings.push_back(blas.warning);
  if (blas.name == "unknown") {
    f.warnings.push_back("could not tell which BLAS LibTorch uses (no BLAS library among the " +
                         std::to_string(libs.size()) + " it mapped)");
  }
  for (const auto& lib : libs) {
    if (lib.find("libgomp") != std::string::npos || lib.find("libomp") != std::string::npos) {
      lt["openmp"] = lib;
      break;
    }
  }
  if (probe.contains("matmul") && probe.at("matmul").is_array()) {
    lt["matmul"] = probe.at("matmul");
  } else if (matmul_s > 0) {
    lt["matmul_note"] =
        "not measured: plugin " + plugin + " was built without torchkit's probe (rebuild it)";
  }
  f.doc["libtorch"] = lt;
}

void judge_cuda_section(DoctorFindings& f, const RuntimeInfo& runtime, bool probed,
                        const Json& nvml, const Json& nvml_devices, int nvml_gpus) {
  Json cu = Json::object();
  const auto rcuda = runtime.cuda.value_or(RuntimeCuda{});
  cu["toolkit"] = rcuda.toolkit.value_or("");
  cu["driver"] = rcuda.driver_cuda.value_or("");
  cu["devices"] = runtime.devices.value_or(Json::array());
  cu["nvml"] = nvml;
  if (!nvml.value("loaded", false)) {
    cu["monitoring"] = "trials record CPU utilisation and resident memory only";
  }
  cu["nvml_devices"] = nvml_devices;
  if (probed) {
    CudaVerdict verdict = judge_cuda(runtime, nvml_gpus);
    cu["verdict"] = verdict.summary;
    for (auto& w : verdict.warnings) f.warnings.push_back(std::move(w));
    for (auto& e : verdict.problems) f.problems.push_back(std::move(e));
  }
  f.doc["cuda"] = cu;
}

void judge_python(DoctorFindings& f, const std::string& interpreter, const Json& probe,
                  const std::string& probe_error, const RuntimeInfo& runtime) {
  Json py = {{"interpreter", interpreter}};
  const std::string fix_env =
      "set GPUSWEEP_PYTHON to the bin/python3 of an environment whose torch is the one "
      "gpusweep was built against, or install that torch there (docs/your-script.md, \"Your "
      "environment\")";
  if (interpreter.empty()) {
    py["verdict"] = "no Python plugin loads, so Python workloads and scripts cannot run";
    f.doc["python"] = py;
    return;
  }
  if (probe.is_null()) {
    py["probe_error"] = probe_error;
    py["verdict"] = "the interpreter does not run: " + probe_error;
    f.problems.push_back("Python " + interpreter + " does not run (" + probe_error + "); " +
                         fix_env);
    f.doc["python"] = py;
    return;
  }
  py["version"] = probe.value("version", "");
  py["executable"] = probe.value("executable", "");
  py["packages"] = probe.value("packages", Json::object());
  const std::string plugins_torch = runtime.torch_version.value_or("");
  const std::string plugins_lib = runtime.torch_library.value_or("");
  if (!probe.contains("torch") || !probe["torch"].is_object()) {
    const std::string why = probe.value("torch_error", std::string("no torch"));
    py["verdict"] = "it cannot import torch (" + why + ")";
    f.problems.push_back("Python " + interpreter + " cannot import torch (" + why +
                         "): Python workloads and scripts would fail; " + fix_env);
    f.doc["python"] = py;
    return;
  }
  const Json& torch = probe["torch"];
  py["torch"] = torch;
  const std::string version = torch.value("version", "");
  const std::string lib = torch.value("lib", "");
  std::error_code ec;
  const bool same_files =
      !plugins_lib.empty() && !lib.empty() &&
      std::filesystem::equivalent(std::filesystem::path(plugins_lib).parent_path(), lib, ec);
  // "2.15.0+cu132" is the build "2.15.0" the plugins report with CUDA 13.2.
  const std::string base = version.substr(0, version.find('+'));
  const std::string cuda = torch.value("cuda", "");
  const std::string plugins_cuda =
      runtime.cuda ? runtime.cuda->torch_cuda.value_or("") : std::string();
  const bool same_build = !plugins_torch.empty() && base == plugins_torch &&
                          (plugins_cuda.empty() || cuda.rfind(plugins_cuda, 0) == 0);
  py["same_libtorch"] = same_files;
  if (same_files) {
    py["verdict"] = "ready: its torch " + version + " is the LibTorch the plugins load";
  } else if (same_build) {
    py["verdict"] = "ready: its torch " + version + " (" + lib +
                    ") is another copy of the build the plugins load (" + plugins_lib + ")";
  } else {
    py["verdict"] = "its torch " + version + (cuda.empty() ? "" : " (CUDA " + cuda + ")") +
                    " is not the LibTorch the plugins load (" +
                    (plugins_torch.empty() ? std::string("unknown") : plugins_torch) +
                    (plugins_cuda.empty() ? "" : ", CUDA " + plugins_cuda) + ")";
    f.problems.push_back("Python " + interpreter + ": " + py["verdict"].get<std::string>() +
                         ", so a Python workload or script would load two builds of torch into "
                         "one process; " +
                         fix_env);
  }
  f.doc["python"] = py;
}

}  // namespace gpusweep::host
