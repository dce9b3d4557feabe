// diagnose's views; see diagnose_view.hpp.
#include "report/diagnose_view.hpp"

#include "report/output.hpp"
#include "support/format.hpp"

#include <cmath>
#include <sstream>
#include <vector>

namespace gpusweep::host {

namespace {

struct Phase {
  const char* label;  // in the table
  const char* key;    // in JSON
  double s;
};

// The phases in the order a step runs them.
std::vector<Phase> phases(const PhaseBreakdown& b) {
  return {{"input wait", "input_wait", b.input_wait_s},
          {"host-to-device", "host_to_device", b.host_to_device_s},
          {"forward", "forward", b.forward_s},
          {"backward", "backward", b.backward_s},
          {"optimiser", "optimizer", b.optimizer_s},
          {"host syncs", "host_sync", b.host_sync_s},
          {"rest", "rest", b.rest_s}};
}

}  // namespace

std::string render_diagnosis(const DiagnoseReport& r, const std::string& workload) {
  const PhaseBreakdown& b = r.breakdown;
  std::ostringstream out;
  out << "\nstep time " << human_seconds(b.step_s) << " (" << human_rate(r.throughput, r.unit)
      << "), on " << (b.cuda ? "CUDA" : "the CPU") << ":\n";
  if (b.approximate) {
    out << "(phases: whole-trial totals over " << b.measured_steps
        << " measured steps and warmup's, per step: approximate)\n";
  }
  Table t({"phase", "per step", "share", ""});
  t.right_align(1);
  t.right_align(2);
  for (const Phase& p : phases(b)) {
    const double share = b.step_s > 0 ? p.s / b.step_s : 0;
    t.add_row({p.label, human_seconds(p.s), fixed(100 * share, 1) + "%",
               std::string(static_cast<size_t>(std::lround(share * 40)), '#')});
  }
  out << t.render();
  if (b.approximate) {
    out << "host syncs per step: unknown (the recorded count includes setup's and evaluation's)\n";
  } else {
    out << "host syncs per step: " << fixed(b.host_syncs_per_step, 2) << "\n";
  }
  if (b.device_busy_share) {
    out << "device busy: " << fixed(100 * *b.device_busy_share, 1) << "% of the step ("
        << b.device_busy_source << ")\n";
  } else if (b.cuda) {
    out << "device busy: not measured (no NVML utilisation over the measured blocks)\n";
  }
  if (b.host_cpu_cores) {
    out << "host CPU: " << fixed(100 * *b.host_cpu_cores, 0) << "% of a core (the worker's CPU "
        << "time over its life)\n";
  }
  if (b.flops_per_step) {
    out << "FLOPs per step: " << human_count(*b.flops_per_step) << ", achieved "
        << fixed(*b.achieved_flops() / 1e9, 2) << " GFLOP/s";
    if (b.peak_flops) {
      const double share = 100 * *b.peak_fraction();
      out << " of a measured matmul peak of " << fixed(*b.peak_flops / 1e9, 1) << " GFLOP/s ("
          << (share < 0.1 ? fixed(share, 4) : fixed(share, 1)) << "%)";
    } else {
      out << " (no matmul peak of this device to compare with)";
    }
    out << "\n";
  } else {
    out << "FLOPs per step: not reported by the plugin (stats flops_per_step)\n";
  }
  const Diagnosis& d = r.diagnosis;
  out << "\nbottleneck: " << bottleneck_name(d.bottleneck) << "\n  " << d.why << "\n";
  for (const auto& n : d.notes) out << "  " << n << "\n";
  if (!d.advice.empty()) {
    out << "\nwhat helps:\n";
    for (const auto& a : d.advice) out << "  - " << a << "\n";
  }
  if (r.grid.empty()) {
    out << "\nno sweep suggested: "
        << (r.manifest_known ? "no common setting of " + workload + " addresses this here"
                             : "the plugin " + workload + " is not here to check one against")
        << "\n";
    return out.str();
  }
  std::string keys;
  for (const auto& [key, values] : r.grid.items()) keys += (keys.empty() ? "" : ", ") + key;
  out << "\nworth sweeping: " << keys << "\n" << r.suggested_sweep.dump(2) << "\n";
  return out.str();
}

nlohmann::json diagnosis_json(const DiagnoseReport& r) {
  const PhaseBreakdown& b = r.breakdown;
  nlohmann::json per_step = nlohmann::json::object();
  for (const Phase& p : phases(b)) per_step[p.key] = p.s;
  return {{"step_time_s", b.step_s},
          {"throughput", r.throughput},
          {"unit", r.unit},
          {"device", b.cuda ? "cuda" : "cpu"},
          {"phases_s_per_step", per_step},
          {"host_syncs_per_step", b.host_syncs_per_step},
          {"flops_per_step", json_or_null(b.flops_per_step)},
          {"achieved_flops", json_or_null(b.achieved_flops())},
          {"peak_flops", json_or_null(b.peak_flops)},
          {"device_busy_share", json_or_null(b.device_busy_share)},
          {"device_busy_source", b.device_busy_source},
          {"host_cpu_cores", json_or_null(b.host_cpu_cores)},
          {"phases_approximate", b.approximate},
          {"bottleneck", bottleneck_name(r.diagnosis.bottleneck)},
          {"advice", r.diagnosis.advice},
          {"why", r.diagnosis.why},
          {"notes", r.diagnosis.notes},
          {"suggested_sweep", r.suggested_sweep}};
}

}  // namespace gpusweep::host
