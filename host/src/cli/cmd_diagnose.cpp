// `gpusweep diagnose`: one instrumented trial that splits the step time into
// phases (torchkit's timers, switched on in that worker only), names the
// bottleneck and writes a sweep of the settings worth trying about it; or,
// with --trial, the same of a trial already in the database.
#include "analysis/diagnose.hpp"
#include "cli/cli.hpp"
#include "plugin_host/registry.hpp"
#include "report/diagnose_view.hpp"
#include "run/diagnose_run.hpp"
#include "run/probe_session.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace {

const std::vector<OutputFormat> kDiagnoseFormats = {OutputFormat::table, OutputFormat::json};

void write_sweep_file(const std::string& path, const Json& sweep, std::ostream& progress) {
  std::ofstream f(path);
  if (!(f << sweep.dump(2) << "\n")) throw Error("cannot write " + path);
  progress << "written to " << path << "; run it with: gpusweep run " << path << "\n";
}

void print_report(const DiagnoseReport& report, bool json, const po::variables_map& vm,
                  std::ostream& progress) {
  if (json) {
    std::cout << diagnosis_json(report).dump(2) << "\n";
  } else {
    std::cout << render_diagnosis(report, report.workload);
  }
  if (vm.count("sweep-out") != 0U && !report.suggested_sweep.is_null()) {
    write_sweep_file(vm["sweep-out"].as<std::string>(), report.suggested_sweep, progress);
  }
}

// diagnose --db FILE --trial ID: the recorded trial, on any machine; the
// plugin, where it is found here, turns the advice into a sweep file.
int rediagnose(const po::variables_map& vm, bool json, std::ostream& progress) {
  StoredDiagnosis request;
  request.db_path = vm["db"].as<std::string>();
  if (!std::filesystem::exists(request.db_path)) {
    throw UsageError("--db " + request.db_path + ": no such file");
  }
  request.trial = vm["trial"].as<int64_t>();
  for (const char* key : {"peak", "cpu-peak"}) {
    if (vm.count(key) == 0U) continue;
    const double gflops = vm[key].as<double>();
    if (!(gflops > 0)) throw UsageError(std::string("--") + key + ": give GFLOP/s above 0");
    (std::string(key) == "peak" ? request.peak_gflops : request.cpu_peak_gflops) = gflops;
  }
  request.plugin_paths = plugin_paths(vm);
  const DiagnoseRun run = rediagnose_trial(request, progress);
  if (!run.report) return run.code;
  print_report(*run.report, json, vm, progress);
  return 0;
}

// diagnose WORKLOAD: one instrumented trial, recorded, then its diagnosis.
int diagnose_new(const po::variables_map& vm, bool json, std::ostream& progress) {
  const double matmul_s = vm["matmul-seconds"].as<double>();
  if (matmul_s < 0 || matmul_s > 60) {
    throw UsageError("--matmul-seconds " + fixed(matmul_s, 1) + ": use 0 to 60");
  }
  SweepSpec spec = command_sweep("diagnose", vm["workload"].as<std::string>(), "gpusweep diagnose",
                                 10, 10, strings_of(vm, "set"));
  const PluginInfo info = Registry(plugin_paths(vm)).describe_sweep(spec);
  const DiagnoseRun run =
      diagnose_new_trial(spec, info, vm["db"].as<std::string>(), matmul_s, progress);
  if (!run.report) return run.code;
  print_report(*run.report, json, vm, progress);
  return 0;
}

int run_diagnose(const po::variables_map& vm) {
  const bool json = format_of(vm, kDiagnoseFormats) == OutputFormat::json;
  // Progress goes to stderr when stdout carries the JSON document.
  std::ostream& progress = json ? std::cerr : std::cout;
  if (vm.count("trial") != 0U) {
    if (vm.count("workload") != 0U || vm.count("set") != 0U) {
      throw UsageError(
          "--trial re-diagnoses a recorded trial: the database names its workload "
          "and settings; drop the workload argument and --set");
    }
    return rediagnose(vm, json, progress);
  }
  if (vm.count("workload") == 0U) {
    throw UsageError("give a WORKLOAD to run and diagnose, or --trial ID of --db");
  }
  if (vm.count("peak") != 0U || vm.count("cpu-peak") != 0U) {
    throw UsageError("--peak and --cpu-peak go with --trial; a new trial measures the peaks");
  }
  return diagnose_new(vm, json, progress);
}

}  // namespace

CommandDef cmd_diagnose() {
  return {
      "diagnose",
      "where a step's time goes, and what to sweep about it",
      "Runs one instrumented trial and splits its step time into input wait, host-to-device\n"
      "copies, forward, backward, optimiser, host syncs and the rest; names the bottleneck\n"
      "(input-, sync-, launch/overhead-, compute- or memory-bound) and writes a ready-to-run\n"
      "sweep of the settings worth trying. The trial is recorded as sweep\n"
      "diagnose-WORKLOAD; --trial re-diagnoses a recorded trial on any machine.",
      "diagnose.md",
      {text("workload", "WORKLOAD", "workload (plugin) name"),
       integer("trial", "ID",
               "re-diagnose this trial of --db instead of running one (no workload argument)"),
       number("peak", "GFLOPS",
              "with --trial: the device's matmul peak in GFLOP/s (doctor measures it), where "
              "the trial stored none"),
       number("cpu-peak", "GFLOPS",
              "with --trial: the CPU's matmul peak in GFLOP/s (doctor's CPU figure), for "
              "whether the CPU would run the model faster"),
       texts("set", "KEY=VALUE",
             "a setting of the diagnosed trial: key=value, or measure.key=value for its "
             "protocol"),
       number("matmul-seconds", "S",
              "length of the matmul peak measurement the FLOP/s are compared with (0: skip)", 1),
       text("sweep-out", "FILE", "also write the suggested sweep file here"), db_option(),
       format_option(kDiagnoseFormats), plugin_path_option()},
      {"workload"},
      {"WORKLOAD [options]", "--db FILE --trial ID [--peak GFLOPS] [--cpu-peak GFLOPS]"},
      run_diagnose};
}

}  // namespace gpusweep::host
