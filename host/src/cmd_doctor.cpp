// `gpusweep doctor`: what this machine offers for sweeps, checked for real.
// The host never loads LibTorch: a worker process loads a LibTorch plugin and
// reports what that mapped (BLAS, OpenMP), LibTorch's version, build and
// threads, and a matmul benchmark measured there (torchkit's probe).
#include "cli.hpp"
#include "doctor.hpp"
#include "error.hpp"
#include "format.hpp"
#include "nvml.hpp"
#include "registry.hpp"
#include "spawn.hpp"

#include <sys/utsname.h>
#include <sys/wait.h>

#include <iostream>
#include <sstream>
#include <thread>

namespace gpusweep::host {

namespace {

struct Report {
  std::vector<std::string> problems;  // a sweep would fail: exit 1
  std::vector<std::string> warnings;  // numbers would mislead: exit 0
};

void line(const std::string& key, const std::string& value) {
  std::cout << "  " << key << std::string(key.size() < 14 ? 14 - key.size() : 1, ' ') << value
            << "\n";
}

// The probe worker's report, or null with why set.
Json run_probe(const PluginFile& file, double matmul_s, std::string* why) {
  std::vector<std::string> args = {"worker", "--probe", "--plugin", file.path};
  if (matmul_s > 0) {
    args.push_back("--probe-matmul");
    args.push_back(std::to_string(matmul_s));
  }
  const Captured c = run_captured(args, 60 + 4 * matmul_s);
  std::stringstream lines(c.proto);
  for (std::string l; std::getline(lines, l);) {
    try {
      Json e = Json::parse(l);
      if (e.value("event", "") == "probe") return e;
      if (e.value("event", "") == "result") *why = e.value("message", "failed");
    } catch (const Json::parse_error&) {
    }
  }
  if (why->empty()) {
    *why = c.timed_out ? "the probe did not finish in time"
           : WIFSIGNALED(c.status) ? "the probe was killed by " + signal_description(WTERMSIG(c.status))
                                   : "the probe reported nothing";
    if (!c.err.empty()) *why += "; stderr: " + c.err.substr(0, 300);
  }
  return nullptr;
}

}  // namespace

int cmd_doctor(const Args& args) {
  po::options_description o;
  o.add_options()("matmul-seconds", po::value<double>()->default_value(2.0, "2"),
                  "length of the float32 matmul benchmark (0: skip it)");
  add_plugin_path_option(o);
  auto p = parse_command(
      "doctor", "[--plugin-path DIR] [--matmul-seconds S]",
      "Checks what this machine offers for sweeps: the CPU, the threads and BLAS LibTorch\n"
      "uses (warning when it is the slow reference BLAS), LibTorch's version and build,\n"
      "the CUDA devices (through NVML, loaded at run time), every plugin on the plugin\n"
      "path and whether it loads, and the matmul throughput in GFLOP/s. LibTorch is probed\n"
      "in a worker process through a LibTorch plugin. Exits 1 when something a sweep needs\n"
      "is broken (no plugin loads, LibTorch cannot be probed), 0 otherwise (warnings\n"
      "included).",
      o, {}, args);
  if (p.help) return 0;
  const double matmul_s = p.vm["matmul-seconds"].as<double>();
  if (matmul_s < 0 || matmul_s > 600) {
    throw UsageError("--matmul-seconds " + fixed(matmul_s, 1) + ": use 0 to 600");
  }
  Report report;

  std::cout << "machine\n";
  const CpuInfo cpu = parse_cpuinfo(read_text("/proc/cpuinfo"));
  utsname u{};
  ::uname(&u);
  line("cpu", cpu.model.empty() ? std::string("unknown (") + u.machine + ")" : cpu.model);
  line("cores", std::to_string(cpu.logical > 0 ? cpu.logical
                                               : static_cast<int>(std::thread::hardware_concurrency())) +
                    " logical" +
                    (cpu.physical > 0 ? ", " + std::to_string(cpu.physical) + " physical" : ""));
  line("kernel", std::string(u.sysname) + " " + u.release);

  // Plugins first: the LibTorch probe goes through one of them.
  Registry registry(plugin_paths(p.vm));
  const auto files = registry.list();
  std::vector<std::pair<PluginFile, PluginInfo>> loaded;
  Table plugins({"plugin", "loads", "version", "abi", "runtime", "file"});
  for (const auto& f : files) {
    try {
      PluginInfo info = registry.describe_file(f);
      const std::string torch = info.runtime.value("torch_version", "");
      plugins.add_row({f.name, colour("yes", "32"), info.manifest.version, info.abi,
                       torch.empty() ? "no LibTorch" : "LibTorch " + torch, f.path});
      loaded.emplace_back(f, std::move(info));
    } catch (const PluginError& e) {
      plugins.add_row({f.name, colour("NO", "31"), "", "", wrap(e.reason(), 50), f.path});
      report.problems.push_back("plugin '" + f.name + "' does not load: " + e.reason());
    } catch (const Error& e) {
      plugins.add_row({f.name, colour("NO", "31"), "", "", wrap(e.what(), 50), f.path});
      report.problems.push_back(e.what());
    }
  }

  // LibTorch, through the first plugin that runs on it.
  std::cout << "\nlibtorch\n";
  const PluginInfo* torch_plugin = nullptr;
  for (const auto& [file, info] : loaded) {
    if (!info.runtime.value("torch_version", "").empty()) {
      torch_plugin = &info;
      break;
    }
  }
  Json cuda_devices = Json::array();
  bool cuda_build = false;
  if (torch_plugin == nullptr) {
    line("status", "no LibTorch plugin loads, so LibTorch was not probed");
    report.problems.push_back("no LibTorch plugin loads: nothing can be swept");
  } else {
    const Json& rt = torch_plugin->runtime;
    cuda_build = rt.value("cuda_build", false);
    cuda_devices = rt.value("devices", Json::array());
    line("probed with", "plugin " + torch_plugin->file.name + " (in a worker process)");
    line("version", rt.value("torch_version", "?") +
                        (cuda_build ? ", CUDA build" : ", CPU-only build (no CUDA)"));
    const int threads = rt.value("threads", 0);
    line("threads", std::to_string(threads) + " intra-op, " +
                        std::to_string(rt.value("interop_threads", 0)) +
                        " inter-op (a sweep's `threads` setting overrides)");
    if (cpu.logical > 0 && threads > 0 && threads < cpu.logical) {
      line("", "LibTorch's default uses " + std::to_string(threads) + " of the " +
                   std::to_string(cpu.logical) + " logical cores here; sweep `threads` (e.g. "
                   "\"threads\": [" + std::to_string(threads) + ", " + std::to_string(cpu.logical) +
                   "]) to see whether more help");
    }
    std::string why;
    const Json probe = run_probe(torch_plugin->file, matmul_s, &why);
    if (probe.is_null()) {
      line("probe", colour("FAILED", "31") + ": " + why);
      report.problems.push_back("LibTorch probe failed: " + why);
    } else {
      const auto libs = probe.value("libraries", std::vector<std::string>{});
      const std::string alternative = blas_alternative();
      const BlasVerdict blas = classify_blas(libs, alternative);
      line("blas", (blas.slow ? colour(blas.name, "31") : blas.name) +
                       (blas.path.empty() ? "" : " (" + blas.path + ")"));
      if (!alternative.empty()) line("libblas.so.3", "-> " + alternative);
      if (!blas.warning.empty()) report.warnings.push_back(blas.warning);
      if (blas.name == "unknown") {
        report.warnings.push_back("could not tell which BLAS LibTorch uses (no BLAS library among "
                                  "the " + std::to_string(libs.size()) + " it mapped)");
      }
      for (const auto& lib : libs) {
        if (lib.find("libgomp") != std::string::npos || lib.find("libomp") != std::string::npos) {
          line("openmp", lib);
          break;
        }
      }
      if (probe.contains("matmul") && probe.at("matmul").is_array()) {
        for (const auto& m : probe.at("matmul")) {
          line("matmul", fixed(m.value("gflops", 0.0), 1) + " GFLOP/s on " +
                             m.value("device", "?") + " (float32 " +
                             std::to_string(m.value("n", 0)) + "x" +
                             std::to_string(m.value("n", 0)) + ", " +
                             std::to_string(m.value("threads", 0)) + " threads, " +
                             std::to_string(m.value("products", 0)) + " products in " +
                             fixed(m.value("seconds", 0.0), 2) + " s)");
        }
      } else if (matmul_s > 0) {
        line("matmul", "not measured: plugin " + torch_plugin->file.name +
                           " was built without torchkit's probe (rebuild it)");
      }
    }
  }

  std::cout << "\ngpus\n";
  std::string nvml_why;
  const auto nvml = Nvml::load(Nvml::default_library(), &nvml_why);
  if (!nvml) {
    line("nvml", "none: " + nvml_why);
    line("monitoring", "trials record CPU utilisation and resident memory only");
  } else {
    line("nvml", nvml->library() + ", driver " + nvml->driver_version());
    const unsigned n = nvml->device_count();
    if (n == 0) line("devices", "none visible");
    for (unsigned i = 0; i < n; ++i) {
      if (auto g = nvml->device(i)) {
        line("cuda:" + std::to_string(i),
             g->name + ", " + human_bytes(g->memory_total_bytes) + ", compute capability " +
                 (g->compute_capability.empty() ? "?" : g->compute_capability));
      }
    }
  }
  if (torch_plugin != nullptr) {
    if (!cuda_build) {
      line("cuda", "LibTorch here is CPU-only: device=cuda trials are skipped, device=auto runs "
                   "on the CPU");
    } else if (cuda_devices.empty()) {
      line("cuda", "CUDA build, but no device is visible (driver missing or "
                   "CUDA_VISIBLE_DEVICES empty): device=auto runs on the CPU");
      if (nvml) report.warnings.push_back("NVML sees GPUs but LibTorch sees none");
    } else {
      for (const auto& d : cuda_devices) {
        line("torch cuda:" + std::to_string(d.value("index", 0)),
             d.value("name", "?") + ", " + human_bytes(d.value("memory_bytes", 0.0)) +
                 ", compute capability " + d.value("compute_capability", "?"));
      }
    }
  }

  std::cout << "\nplugins (" << files.size() << " found)\n";
  if (files.empty()) {
    std::string dirs;
    for (const auto& d : registry.search_path()) dirs += (dirs.empty() ? "" : ":") + d;
    std::cout << "  none on the plugin path (" << dirs << ")\n";
    report.problems.push_back("no plugins found; add folders with --plugin-path or "
                              "GPUSWEEP_PLUGIN_PATH");
  } else {
    std::cout << plugins.render();
  }

  std::cout << "\n";
  for (const auto& w : report.warnings) std::cout << colour("warning", "33") << ": " << w << "\n";
  for (const auto& e : report.problems) std::cout << colour("problem", "31") << ": " << e << "\n";
  if (report.problems.empty()) {
    std::cout << "ready to sweep"
              << (report.warnings.empty() ? "" : " (" + std::to_string(report.warnings.size()) +
                                                     " warning(s) above)")
              << "\n";
    return 0;
  }
  std::cout << report.problems.size() << " problem(s): sweeps will fail until they are fixed\n";
  return 1;
}

}  // namespace gpusweep::host
