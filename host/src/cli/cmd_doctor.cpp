// `gpusweep doctor`: what this machine offers for sweeps, checked for real.
// The host never loads LibTorch: a worker process loads a LibTorch plugin and
// reports what that mapped (BLAS, OpenMP), LibTorch's version, build and
// threads, and a matmul benchmark measured there (torchkit's probe). The
// findings are gathered into one JSON document; doctor.cpp judges CUDA and
// renders the text form from it.
#include "protocol/worker_args.hpp"
#include "protocol/events.hpp"
#include "cli/cli.hpp"
#include "analysis/doctor.hpp"
#include "report/doctor_view.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "support/nvml.hpp"
#include "plugins/registry.hpp"
#include "support/spawn.hpp"

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

// The probe worker's report, or null with why set.
Json run_probe(const PluginFile& file, double matmul_s, std::string* why) {
  WorkerArgs w;
  w.mode = WorkerMode::probe;
  w.plugin_path = file.path;
  w.probe_matmul_s = matmul_s;
  const Captured c = run_captured(w.to_argv(), 60 + 4 * matmul_s);
  for (const Json& e : event::parse(c.proto)) {
    if (event::kind(e) == event::probe) return e;
    if (event::kind(e) == event::result) *why = e.value("message", "failed");
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
                  "length of the float32 matmul benchmark (0: skip it)")(
      "format", po::value<std::string>()->default_value("table"),
      "table (the report as text) or json (the same findings as one JSON document)");
  add_plugin_path_option(o);
  auto p = parse_command(
      "doctor", "[--plugin-path DIR] [--matmul-seconds S] [--format table|json]",
      "Checks what this machine offers for sweeps: the CPU; the LibTorch the plugins run on\n"
      "(version, the file it was loaded from, the CUDA and cuDNN versions it was built for,\n"
      "the CPU kernels it dispatches to, its BLAS and threads); the CUDA toolkit the plugins\n"
      "were compiled against, the driver and the devices (LibTorch's view and NVML's, loaded\n"
      "at run time), and what they mean for a sweep (a wheel built for a newer CUDA than the\n"
      "driver supports is a problem, with the fix); every plugin on the plugin path and\n"
      "whether it loads; the matmul throughput in GFLOP/s. LibTorch is probed in a worker\n"
      "process through a LibTorch plugin. Exits 1 when something a sweep needs is broken (no\n"
      "plugin loads, LibTorch cannot be probed, CUDA cannot start), 0 otherwise (warnings\n"
      "included).",
      o, {}, args);
  if (p.help) return 0;
  const double matmul_s = p.vm["matmul-seconds"].as<double>();
  if (matmul_s < 0 || matmul_s > 600) {
    throw UsageError("--matmul-seconds " + fixed(matmul_s, 1) + ": use 0 to 600");
  }
  const std::string format = p.vm["format"].as<std::string>();
  if (format != "table" && format != "json") {
    throw UsageError("doctor --format " + format + ": use table or json");
  }
  Report report;
  Json doc = Json::object();

  const CpuInfo cpu = parse_cpuinfo(read_text("/proc/cpuinfo"));
  utsname u{};
  ::uname(&u);
  doc["machine"] = {
      {"cpu", cpu.model.empty() ? std::string("unknown (") + u.machine + ")" : cpu.model},
      {"logical_cores",
       cpu.logical > 0 ? cpu.logical : static_cast<int>(std::thread::hardware_concurrency())},
      {"physical_cores", cpu.physical},
      {"kernel", std::string(u.sysname) + " " + u.release}};

  // Plugins first: the LibTorch probe goes through one of them.
  Registry registry(plugin_paths(p.vm));
  const auto files = registry.list();
  std::vector<std::pair<PluginFile, PluginInfo>> loaded;
  Json plugins = Json::array();
  for (const auto& f : files) {
    Json row = {{"name", f.name}, {"file", f.path}};
    try {
      PluginInfo info = registry.describe_file(f);
      row["loads"] = true;
      row["version"] = info.manifest.version;
      row["abi"] = info.abi;
      row["torch_version"] = info.runtime.value("torch_version", "");
      loaded.emplace_back(f, std::move(info));
    } catch (const PluginError& e) {
      row["loads"] = false;
      row["error"] = e.reason();
      report.problems.push_back("plugin '" + f.name + "' does not load: " + e.reason());
    } catch (const Error& e) {
      row["loads"] = false;
      row["error"] = e.what();
      report.problems.push_back(e.what());
    }
    plugins.push_back(row);
  }
  doc["plugins"] = plugins;
  std::string dirs;
  for (const auto& d : registry.search_path()) dirs += (dirs.empty() ? "" : ":") + d;
  doc["plugin_path"] = dirs;
  if (files.empty()) {
    report.problems.push_back("no plugins found; add folders with --plugin-path or "
                              "GPUSWEEP_PLUGIN_PATH");
  }

  // LibTorch, through the first plugin that runs on it.
  const PluginInfo* torch_plugin = nullptr;
  for (const auto& [file, info] : loaded) {
    if (!info.runtime.value("torch_version", "").empty()) {
      torch_plugin = &info;
      break;
    }
  }
  Json lt = Json::object();
  Json runtime = Json::object();
  if (torch_plugin == nullptr) {
    lt["probed"] = false;
    lt["status"] = "no LibTorch plugin loads, so LibTorch was not probed";
    report.problems.push_back("no LibTorch plugin loads: nothing can be swept");
  } else {
    runtime = torch_plugin->runtime;
    const Json cuda = runtime.value("cuda", Json::object());
    lt["probed"] = true;
    lt["plugin"] = torch_plugin->file.name;
    lt["version"] = runtime.value("torch_version", "");
    lt["cuda_build"] = runtime.value("cuda_build", false);
    lt["cuda"] = cuda.value("torch_cuda", "");
    lt["cudnn"] = cuda.value("torch_cudnn", "");
    lt["library"] = runtime.value("torch_library", "");
    lt["cpu_capability"] = runtime.value("cpu_capability", "");
    const int threads = runtime.value("threads", 0);
    lt["threads"] = threads;
    lt["interop_threads"] = runtime.value("interop_threads", 0);
    if (cpu.logical > 0 && threads > 0 && threads < cpu.logical) {
      lt["threads_advice"] = "LibTorch's default uses " + std::to_string(threads) + " of the " +
                             std::to_string(cpu.logical) + " logical cores here; sweep `threads` "
                             "(e.g. \"threads\": [" + std::to_string(threads) + ", " +
                             std::to_string(cpu.logical) + "]) to see whether more help";
    }
    std::string why;
    const Json probe = run_probe(torch_plugin->file, matmul_s, &why);
    if (probe.is_null()) {
      lt["probe_error"] = why;
      report.problems.push_back("LibTorch probe failed: " + why);
    } else {
      const auto libs = probe.value("libraries", std::vector<std::string>{});
      const std::string alternative = blas_alternative();
      BlasVerdict blas = classify_blas(libs, alternative);
      if (blas.name == "unknown" && !runtime.value("blas", "").empty() &&
          runtime.value("blas", "") != "unknown") {
        // No BLAS library mapped: the torch wheel links MKL into libtorch_cpu.
        blas.name = runtime.value("blas", "");
        blas.path = "linked into " + runtime.value("torch_library", std::string("LibTorch"));
      }
      lt["blas"] = {{"name", blas.name}, {"path", blas.path}, {"slow", blas.slow},
                    {"alternative", alternative}};
      if (!blas.warning.empty()) report.warnings.push_back(blas.warning);
      if (blas.name == "unknown") {
        report.warnings.push_back("could not tell which BLAS LibTorch uses (no BLAS library among "
                                  "the " + std::to_string(libs.size()) + " it mapped)");
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
        lt["matmul_note"] = "not measured: plugin " + torch_plugin->file.name +
                            " was built without torchkit's probe (rebuild it)";
      }
    }
  }
  doc["libtorch"] = lt;

  Json cu = Json::object();
  const Json rcuda = runtime.value("cuda", Json::object());
  cu["toolkit"] = rcuda.value("toolkit", "");
  cu["driver"] = rcuda.value("driver_cuda", "");
  cu["devices"] = runtime.value("devices", Json::array());
  std::string nvml_why;
  const auto nvml = Nvml::load(Nvml::default_library(), &nvml_why);
  int nvml_gpus = -1;
  Json nvml_devices = Json::array();
  if (!nvml) {
    cu["nvml"] = {{"loaded", false}, {"why", nvml_why}};
    cu["monitoring"] = "trials record CPU utilisation and resident memory only";
  } else {
    cu["nvml"] = {{"loaded", true}, {"library", nvml->library()},
                  {"driver_version", nvml->driver_version()}};
    nvml_gpus = static_cast<int>(nvml->device_count());
    for (unsigned i = 0; i < nvml->device_count(); ++i) {
      if (auto g = nvml->device(i)) {
        nvml_devices.push_back({{"index", i}, {"name", g->name},
                                {"memory_bytes", g->memory_total_bytes},
                                {"compute_capability", g->compute_capability}});
      }
    }
  }
  cu["nvml_devices"] = nvml_devices;
  if (torch_plugin != nullptr) {
    CudaVerdict verdict = judge_cuda(runtime, nvml_gpus);
    cu["verdict"] = verdict.summary;
    for (auto& w : verdict.warnings) report.warnings.push_back(std::move(w));
    for (auto& e : verdict.problems) report.problems.push_back(std::move(e));
  }
  doc["cuda"] = cu;
  doc["warnings"] = report.warnings;
  doc["problems"] = report.problems;
  doc["ready"] = report.problems.empty();

  if (format == "json") {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << render_doctor(doc, use_colour());
  }
  return report.problems.empty() ? 0 : 1;
}

}  // namespace gpusweep::host
