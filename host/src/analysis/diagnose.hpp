// `gpusweep diagnose`'s analysis, apart from running the trial so that it is
// tested on synthetic timings: where a step's time goes (per phase, from
// torchkit's phase timers), which resource bounds it, and the settings worth
// sweeping about it.
#pragma once

#include "model/device.hpp"
#include "model/manifest.hpp"
#include "model/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

// Seconds per measured step in each phase (rest = what no timer covered:
// the workload's own host code, environment steps, Python-free glue).
struct PhaseBreakdown {
  double step_s = 0;
  double input_wait_s = 0;
  double host_to_device_s = 0;
  double forward_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;
  double host_sync_s = 0;
  double rest_s = 0;
  double host_syncs_per_step = 0;
  // A data-parallel trial: all-reduce time backward did not hide (within
  // backward_s), rank 0's.
  double comm_exposed_s = 0;
  std::optional<double> flops_per_step;  // from the plugin's stats
  std::optional<double> peak_flops;      // the matmul probe on the trial's device
  bool cuda = false;

  std::optional<double> achieved_flops() const;
  std::optional<double> peak_fraction() const;  // achieved / peak
};

// The phase totals of the measured steps: the stats at the end less the
// snapshot after warmup, over `steps` steps taking `seconds` in all.
PhaseBreakdown breakdown_from_stats(const Json& snapshot, const Json& final_stats, double steps,
                                    double seconds);

enum class Bottleneck { input, sync, overhead, compute, memory, communication };
const char* bottleneck_name(Bottleneck b);  // "input-bound", "sync-bound", ...

struct Diagnosis {
  Bottleneck bottleneck = Bottleneck::compute;
  std::string why;                 // the numbers behind the verdict
  std::vector<std::string> notes;  // secondary observations
};

// Thresholds (shares of the step time): see the definition.
Diagnosis classify(const PhaseBreakdown& b);

// A grid of the settings worth sweeping for this bottleneck, restricted to
// settings the workload has (and that apply, on this device), each axis
// starting at the diagnosed config's value (the baseline).
Json suggest_grid(const Diagnosis& d, const PluginManifest& manifest, const Json& config,
                  const TrialDevice& device);

// What a trial's worker reported besides its blocks (the last of each event;
// run/probe_session.hpp gathers it).
struct TrialReadings {
  Json stats_snapshot = Json::object();  // the plugin's statistics after warmup
  Json stats = Json::object();           // ... after the last block
  Json matmul;                           // the matmul probes (array of {device, gflops})
  Json runtime = Json::object();         // the plugin's runtime report (cuda_available)
};

// The whole diagnosis of one trial.
struct DiagnoseReport {
  PhaseBreakdown breakdown;
  Diagnosis diagnosis;
  double throughput = 0;
  std::string unit;
  Json grid;             // suggest_grid(): empty when no setting addresses it
  Json suggested_sweep;  // a sweep file over grid, checked as `run` checks it; null when empty
};

// Diagnoses a finished ok trial of config (spec's one config) from its
// outcome and readings; nothing, with why, when the plugin reported no phase
// timings. Throws UsageError if the suggested sweep would not validate.
std::optional<DiagnoseReport> diagnose_trial(const SweepSpec& spec, const PluginManifest& manifest,
                                             const Json& config, const db::TrialOutcome& outcome,
                                             const TrialReadings& readings, std::string* why);

}  // namespace gpusweep::host
