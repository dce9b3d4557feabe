// diagnose's instrumented trial; see diagnose_run.hpp.
#include "run/diagnose_run.hpp"

#include "run/probe_session.hpp"
#include "support/error.hpp"
#include "support/exit_code.hpp"

namespace gpusweep::host {

namespace {

std::string protocol_text(const SweepSpec& spec) {
  return std::to_string(spec.measure.warmup_steps) + " warmup steps, " +
         std::to_string(spec.measure.blocks) + " " + spec.measure.block_text();
}

}  // namespace

DiagnoseRun diagnose_new_trial(const SweepSpec& spec, const PluginInfo& info,
                               const std::string& db_path, double matmul_s,
                               std::ostream& progress) {
  const Json config = resolve_single_config(spec, info.manifest);
  WorkerArgs worker;
  worker.diagnose = true;
  worker.probe_matmul_s = matmul_s;
  ProbeSession session(db_path, spec, info, db::RunKind::diagnose);
  progress << "diagnose " << spec.workload << ": one instrumented trial (" << protocol_text(spec)
           << "), trial recorded as sweep '" << spec.name << "' (run " << session.sweep_id()
           << ") in " << db_path << "\n"
           << std::flush;
  const ProbeResult r = session.run(config, spec.measure, worker);
  session.close(!r.interrupted);
  DiagnoseRun out;
  if (r.interrupted) {
    out.code = kExitInterrupted;
    return out;
  }
  if (r.outcome.status != db::TrialStatus::ok) {
    progress << "the trial ended " << db::status_name(r.outcome.status) << ": "
             << r.outcome.error.value_or("") << "\n";
    out.code = r.outcome.status == db::TrialStatus::skipped ? 2 : 1;
    return out;
  }
  std::string why;
  out.report = diagnose_trial(spec, info.manifest, config, r.outcome, r.readings(), &why);
  if (!out.report) {
    progress << why << "\n";
    out.code = 1;
  }
  return out;
}

DiagnoseRun rediagnose_trial(const StoredDiagnosis& request, std::ostream& progress) {
  db::Store store(request.db_path, db::Connection::Mode::read_only);
  DiagnosedTrial t = load_diagnosed_trial(store, request.trial);
  DiagnoseRun out;
  if (t.status != db::TrialStatus::ok) {
    progress << "trial " << request.trial << " ended " << db::status_name(t.status) << ": "
             << t.error << "\n";
    out.code = 1;
    return out;
  }
  const bool cuda = trial_device(t.view.config, t.view.runtime).cuda;
  if (request.peak_gflops)
    t.view.stats[cuda ? kMatmulPeakCuda : kMatmulPeakCpu] = *request.peak_gflops;
  if (request.cpu_peak_gflops) t.view.stats[kMatmulPeakCpu] = *request.cpu_peak_gflops;
  std::optional<PluginInfo> info;
  try {
    info = Registry(request.plugin_paths).describe(t.workload);
  } catch (const Error& e) {
    progress << "no plugin " << t.workload << " here (" << e.what()
             << "): the advice is text; a suggested sweep needs the plugin\n";
  }
  progress << "diagnose trial " << request.trial << " (" << t.workload << ") of " << request.db_path
           << "\n";
  std::string why;
  out.report = diagnose_record(t.workload, t.view, t.throughput, t.unit,
                               info ? &info->manifest : nullptr, &why);
  if (!out.report) {
    progress << why << "\n";
    out.code = 1;
  }
  return out;
}

}  // namespace gpusweep::host
