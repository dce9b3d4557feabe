// Machine facts for `gpusweep doctor`; see doctor.hpp.
#include "doctor.hpp"

#include "format.hpp"

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

const char* kCudaOnly =
    "CUDA-only settings (precision=fp16, tf32, cudnn_benchmark, pin_memory, non_blocking) are "
    "skipped with the reason, and trials record no GPU figures";

}  // namespace

CudaVerdict judge_cuda(const nlohmann::json& runtime, int nvml_gpus) {
  CudaVerdict v;
  const bool cuda_build = runtime.value("cuda_build", false);
  const auto cuda = runtime.value("cuda", nlohmann::json::object());
  const std::string built_for = cuda.value("torch_cuda", "");
  const std::string driver = cuda.value("driver_cuda", "");
  const std::string toolkit = cuda.value("toolkit", "");
  const auto devices = runtime.value("devices", nlohmann::json::array());
  if (!cuda_build) {
    v.summary = "LibTorch here is a CPU-only build: device=cuda trials are skipped and "
                "device=auto runs on the CPU; " + std::string(kCudaOnly);
    if (nvml_gpus > 0) {
      v.warnings.push_back(
          "NVML sees " + std::to_string(nvml_gpus) + " GPU(s) but the plugins were built against "
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
                "skipped; " + kCudaOnly;
    return v;
  }
  const Version d = parse_version(driver);
  if (b.known() && d.known() && d.major < b.major) {
    v.problems.push_back(
        "LibTorch was built for CUDA " + built_for + " but the NVIDIA driver supports CUDA " +
        driver + " at most: CUDA cannot start and every GPU trial fails. Fix: install a driver "
        "for CUDA " + std::to_string(b.major) + ".x, or a torch built for CUDA " +
        std::to_string(d.major) + ".x (scripts/install-deps.sh pins the wheel)");
  } else if (b.known() && d.known() && older(d, b)) {
    v.warnings.push_back(
        "LibTorch was built for CUDA " + built_for + " and the driver supports CUDA " + driver +
        ": it runs under CUDA's minor-version compatibility, but kernels compiled at run time "
        "from PTX can fail; update the driver to one for CUDA " + built_for + " or newer");
  }
  if (devices.empty()) {
    v.summary = "driver for CUDA " + driver + ", but LibTorch sees no device (CUDA_VISIBLE_DEVICES "
                "empty, or no GPU): device=auto trials run on the CPU";
    if (nvml_gpus > 0) v.warnings.push_back("NVML sees GPUs but LibTorch sees none");
    return v;
  }
  v.summary = std::to_string(devices.size()) + " CUDA device(s) visible: device=auto runs on "
              "cuda:0 (" + devices.front().value("name", "?") + ")";
  return v;
}

std::string render_doctor(const nlohmann::json& doc, bool use_colour) {
  std::ostringstream out;
  // format.hpp's colour() where colour is wanted (it also checks the terminal).
  auto paint = [use_colour](const std::string& text, const char* code) {
    return use_colour ? colour(text, code) : text;
  };
  auto line = [&out](const std::string& key, const std::string& value) {
    const std::string pad(key.size() < 14 ? 14 - key.size() : 1, ' ');
    // Continuation lines of a wrapped value start under its first line.
    std::string indented;
    for (char c : value) {
      indented += c;
      if (c == '\n') indented += std::string(2 + key.size() + pad.size(), ' ');
    }
    out << "  " << key << pad << indented << "\n";
  };
  const auto& m = doc.at("machine");
  out << "machine\n";
  line("cpu", m.value("cpu", "unknown"));
  const int physical = m.value("physical_cores", 0);
  line("cores", std::to_string(m.value("logical_cores", 0)) + " logical" +
                    (physical > 0 ? ", " + std::to_string(physical) + " physical" : ""));
  line("kernel", m.value("kernel", ""));

  out << "\nlibtorch\n";
  const auto& lt = doc.at("libtorch");
  if (!lt.value("probed", false)) {
    line("status", lt.value("status", "not probed"));
  } else {
    line("probed with", "plugin " + lt.value("plugin", "?") + " (in a worker process)");
    line("version", lt.value("version", "?") +
                        (lt.value("cuda_build", false)
                             ? ", CUDA build (for CUDA " + lt.value("cuda", "?") + ", cuDNN " +
                                   lt.value("cudnn", "?") + ")"
                             : ", CPU-only build (no CUDA)"));
    if (!lt.value("library", "").empty()) line("loaded from", lt.value("library", ""));
    if (!lt.value("cpu_capability", "").empty()) {
      line("cpu kernels", lt.value("cpu_capability", "") + " (ATen's dispatch)");
    }
    line("threads", std::to_string(lt.value("threads", 0)) + " intra-op, " +
                        std::to_string(lt.value("interop_threads", 0)) +
                        " inter-op (a sweep's `threads` setting overrides)");
    if (lt.contains("threads_advice")) line("", lt.value("threads_advice", ""));
    if (lt.contains("probe_error")) {
      line("probe", paint("FAILED", "31") + ": " + lt.value("probe_error", ""));
    }
    if (lt.contains("blas")) {
      const auto& blas = lt.at("blas");
      line("blas", (blas.value("slow", false) ? paint(blas.value("name", "?"), "31")
                                              : blas.value("name", "?")) +
                       (blas.value("path", "").empty() ? "" : " (" + blas.value("path", "") + ")"));
      if (!blas.value("alternative", "").empty()) {
        line("libblas.so.3", "-> " + blas.value("alternative", ""));
      }
    }
    if (!lt.value("openmp", "").empty()) line("openmp", lt.value("openmp", ""));
    for (const auto& mm : lt.value("matmul", nlohmann::json::array())) {
      line("matmul", fixed(mm.value("gflops", 0.0), 1) + " GFLOP/s on " + mm.value("device", "?") +
                         " (float32 " + std::to_string(mm.value("n", 0)) + "x" +
                         std::to_string(mm.value("n", 0)) + ", " +
                         std::to_string(mm.value("threads", 0)) + " threads, " +
                         std::to_string(mm.value("products", 0)) + " products in " +
                         fixed(mm.value("seconds", 0.0), 2) + " s)");
    }
    if (lt.contains("matmul_note")) line("matmul", lt.value("matmul_note", ""));
  }

  out << "\ncuda\n";
  const auto& c = doc.at("cuda");
  if (!c.value("toolkit", "").empty()) {
    line("toolkit", "CUDA " + c.value("toolkit", "") + " (the headers the plugins were compiled "
                                                      "against)");
  }
  line("driver", c.value("driver", "").empty() ? "none" : "CUDA " + c.value("driver", ""));
  if (c.contains("nvml")) {
    const auto& n = c.at("nvml");
    line("nvml", n.value("loaded", false)
                     ? n.value("library", "") + ", driver " + n.value("driver_version", "")
                     : "none: " + n.value("why", ""));
  }
  for (const auto& g : c.value("nvml_devices", nlohmann::json::array())) {
    line("nvml " + std::to_string(g.value("index", 0)),
         g.value("name", "?") + ", " + human_bytes(g.value("memory_bytes", 0.0)) +
             ", compute capability " + g.value("compute_capability", "?"));
  }
  for (const auto& d : c.value("devices", nlohmann::json::array())) {
    line("cuda:" + std::to_string(d.value("index", 0)),
         d.value("name", "?") + ", " + human_bytes(d.value("memory_bytes", 0.0)) +
             ", compute capability " + d.value("compute_capability", "?") +
             (d.value("pci_bus_id", "").empty() ? "" : ", " + d.value("pci_bus_id", "")));
  }
  if (!c.value("verdict", "").empty()) line("for a sweep", wrap(c.value("verdict", ""), 64));
  if (!c.value("monitoring", "").empty()) line("monitoring", c.value("monitoring", ""));

  const auto plugins = doc.value("plugins", nlohmann::json::array());
  out << "\nplugins (" << plugins.size() << " found)\n";
  if (plugins.empty()) {
    out << "  none on the plugin path (" << doc.value("plugin_path", "") << ")\n";
  } else {
    Table t({"plugin", "loads", "version", "abi", "runtime", "file"});
    for (const auto& p : plugins) {
      const bool loads = p.value("loads", false);
      const std::string torch = p.value("torch_version", "");
      t.add_row({p.value("name", ""), loads ? paint("yes", "32") : paint("NO", "31"),
                 p.value("version", ""), p.value("abi", ""),
                 loads ? (torch.empty() ? "no LibTorch" : "LibTorch " + torch)
                       : wrap(p.value("error", ""), 50),
                 p.value("file", "")});
    }
    out << t.render();
  }

  out << "\n";
  const auto warnings = doc.value("warnings", std::vector<std::string>{});
  const auto problems = doc.value("problems", std::vector<std::string>{});
  for (const auto& w : warnings) out << paint("warning", "33") << ": " << w << "\n";
  for (const auto& e : problems) out << paint("problem", "31") << ": " << e << "\n";
  if (problems.empty()) {
    out << "ready to sweep"
        << (warnings.empty() ? "" : " (" + std::to_string(warnings.size()) + " warning(s) above)")
        << "\n";
  } else {
    out << problems.size() << " problem(s): sweeps will fail until they are fixed\n";
  }
  return out.str();
}

}  // namespace gpusweep::host
