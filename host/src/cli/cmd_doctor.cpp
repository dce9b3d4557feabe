// `gpusweep doctor`: what this machine offers for sweeps, checked for real.
// The host never loads LibTorch: a worker process loads a LibTorch plugin and
// reports what that mapped (BLAS, OpenMP), LibTorch's version, build and
// threads, and a matmul benchmark measured there (plugin_host/survey.hpp). The
// findings are gathered into one JSON document (analysis/doctor.hpp judges
// them) that report/doctor_view.hpp renders as text.
#include "analysis/doctor.hpp"
#include "cli/cli.hpp"
#include "plugin_host/survey.hpp"
#include "report/doctor_view.hpp"
#include "support/error.hpp"
#include "support/format.hpp"
#include "support/nvml.hpp"

#include <sys/utsname.h>

#include <iostream>
#include <thread>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kDoctorFormats = {OutputFormat::table, OutputFormat::json};

// NVML's view: {loaded, library, driver_version} or {loaded: false, why}, its
// devices, and their count (-1 when it did not load).
void read_nvml(Json* nvml, Json* devices, int* count) {
  std::string why;
  const auto lib = Nvml::load(Nvml::default_library(), &why);
  *devices = Json::array();
  *count = -1;
  if (!lib) {
    *nvml = {{"loaded", false}, {"why", why}};
    return;
  }
  *nvml = {
      {"loaded", true}, {"library", lib->library()}, {"driver_version", lib->driver_version()}};
  *count = static_cast<int>(lib->device_count());
  for (unsigned i = 0; i < lib->device_count(); ++i) {
    if (auto g = lib->device(i)) {
      devices->push_back({{"index", i},
                          {"name", g->name},
                          {"memory_bytes", g->memory_total_bytes},
                          {"compute_capability", g->compute_capability}});
    }
  }
}

int run_doctor(const po::variables_map& vm) {
  const double matmul_s = vm["matmul-seconds"].as<double>();
  if (matmul_s < 0 || matmul_s > 600) {
    throw UsageError("--matmul-seconds " + fixed(matmul_s, 1) + ": use 0 to 600");
  }
  const bool json = format_of(vm, kDoctorFormats) == OutputFormat::json;
  DoctorFindings f;
  const CpuInfo cpu = parse_cpuinfo(read_text("/proc/cpuinfo"));
  utsname u{};
  ::uname(&u);
  record_machine(f, cpu, u.machine, std::string(u.sysname) + " " + u.release,
                 static_cast<int>(std::thread::hardware_concurrency()));

  // Plugins first: the LibTorch probe goes through one of them.
  const PluginSurvey survey = survey_plugins(Registry(plugin_paths(vm)));
  f.doc["plugins"] = survey.rows;
  f.doc["plugin_path"] = survey.search_path;
  f.problems = survey.problems;
  const PluginInfo* torch = libtorch_plugin(survey);
  const RuntimeInfo runtime = torch != nullptr ? torch->runtime_info : RuntimeInfo{};
  std::string why;
  const Json probe = torch != nullptr ? probe_libtorch(torch->file, matmul_s, &why) : Json();
  judge_libtorch(f, torch != nullptr ? torch->file.name : "", runtime, probe, why, matmul_s, cpu,
                 blas_alternative());

  Json nvml, nvml_devices;
  int nvml_gpus = -1;
  read_nvml(&nvml, &nvml_devices, &nvml_gpus);
  judge_cuda_section(f, runtime, torch != nullptr, nvml, nvml_devices, nvml_gpus);

  // The environment Python workloads and scripts run in (GPUSWEEP_PYTHON's).
  const std::string python = embedded_python(survey);
  std::string python_why;
  const Json python_probe = python.empty() ? Json() : probe_python(python, &python_why);
  judge_python(f, python, python_probe, python_why, runtime);

  const Json& doc = f.finish();
  if (json) {
    std::cout << doc.dump(2) << "\n";
  } else {
    std::cout << render_doctor(doc, use_colour());
  }
  return f.problems.empty() ? 0 : 1;
}

}  // namespace

CommandDef cmd_doctor() {
  return {"doctor",
          "check this machine: CPU, BLAS, LibTorch, GPUs, plugins",
          "Checks what this machine offers for sweeps, for real: the CPU; the LibTorch the\n"
          "plugins run on (probed in a worker through a plugin); the CUDA toolkit, driver and\n"
          "devices (LibTorch's and NVML's view) and what they mean for a sweep; every plugin and\n"
          "whether it loads; a matmul benchmark; the Python that Python workloads embed. Exits\n"
          "1 when something a sweep needs is broken, 0 otherwise (warnings included).",
          "machine.md",
          {number("matmul-seconds", "S", "length of the float32 matmul benchmark (0: skip it)", 2),
           format_option(kDoctorFormats), plugin_path_option()},
          {},
          {},
          run_doctor};
}

}  // namespace gpusweep::host
