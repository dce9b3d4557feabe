// `gpusweep diagnose WORKLOAD`: one instrumented trial (torchkit's phase
// timers switched on in its worker only), recorded in the database as sweep
// diagnose-WORKLOAD, and its diagnosis.
#pragma once

#include "analysis/diagnose.hpp"
#include "plugin_host/registry.hpp"
#include "spec/sweep.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gpusweep::host {

struct DiagnoseRun {
  std::optional<DiagnoseReport> report;
  int code = 0;  // the command's exit code without a report: 130 interrupted, 2 skipped, 1 else
};

// Runs the trial of `spec`'s one config with a matmul peak measured for
// matmul_s seconds, saying what it does on `progress`.
DiagnoseRun diagnose_new_trial(const SweepSpec& spec, const PluginInfo& info,
                               const std::string& db_path, double matmul_s, std::ostream& progress);

// diagnose --db FILE --trial ID: a recorded trial, on any machine, with the
// device's and the CPU's matmul peaks in GFLOP/s where the trial stored none;
// the plugin, where it is found on plugin_paths, turns the advice into a
// sweep file.
struct StoredDiagnosis {
  std::string db_path;
  int64_t trial = 0;
  std::optional<double> peak_gflops, cpu_peak_gflops;
  std::vector<std::string> plugin_paths;
};
DiagnoseRun rediagnose_trial(const StoredDiagnosis& request, std::ostream& progress);

}  // namespace gpusweep::host
