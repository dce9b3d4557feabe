// `gpusweep diagnose`'s analysis, apart from running the trial so that it is
// tested on synthetic timings and on recorded ones: where a step's time goes
// (per phase, from torchkit's phase timers), how busy the device was, which
// resource bounds the step, and what is worth trying about it. A trial is
// diagnosed from what its record holds (its blocks and stat metrics), so a
// database from a GPU cluster can be re-diagnosed on a laptop.
#pragma once

#include "spec/device.hpp"
#include "spec/manifest.hpp"
#include "spec/metrics.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <map>
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
  std::optional<double> cpu_peak_flops;  // the CPU's matmul peak (probe, or doctor's figure)
  bool cuda = false;
  // Share of the step time the device ran kernels (0..1), and where the
  // figure comes from; empty when nothing measured it (a CPU trial, no NVML).
  std::optional<double> device_busy_share;
  std::string device_busy_source;
  // The worker process's CPU time over its wall time (1.0 = one core busy).
  std::optional<double> host_cpu_cores;
  // The step replays CUDA graphs (cuda_graphs_captured > 0): its forward,
  // backward and optimiser are one launch, whose time the phase timers see
  // only as a whole, outside their phases (rest_s).
  bool graphed = false;
  // The phases are whole-trial totals, warmup included, spread over every
  // step (a trial recorded before the end-of-warmup totals were stored):
  // shares of the stable phases (input, copies) hold, the rest is rough.
  bool approximate = false;
  int64_t measured_steps = 0;

  std::optional<double> achieved_flops() const;
  std::optional<double> peak_fraction() const;  // achieved / peak
};

// The phase totals of the measured steps: the stats at the end less the
// snapshot after warmup, over `steps` steps taking `seconds` in all.
PhaseBreakdown breakdown_from_stats(const Json& snapshot, const Json& final_stats, double steps,
                                    double seconds);

// A recorded trial as diagnose reads it: from the database (`diagnose --db
// --trial`) or from a trial that just ran.
struct TrialRecordView {
  Json config = Json::object();         // the resolved config
  Json runtime = Json::object();        // the runtime its worker reported (devices)
  std::map<std::string, double> stats;  // its stat metrics at step 0
  std::vector<db::BlockSample> blocks;  // the measured blocks
  int64_t warmup_steps = 0;
};

// A trial of the database as diagnose reads it, with its workload, status
// and throughput; throws UsageError naming the trial when there is none.
struct DiagnosedTrial {
  std::string workload;
  db::TrialStatus status = db::TrialStatus::pending;
  std::string error;
  double throughput = 0;
  std::string unit;
  TrialRecordView view;
};
DiagnosedTrial load_diagnosed_trial(db::Store& store, int64_t trial_id);

// The statistics a trial keeps for an exact re-diagnosis, by name: from
// the worker's end-of-warmup snapshot its phase totals and host syncs
// (kWarmupEndPrefix + the plugin's name), from its matmul probe event's list
// the peak of each kind of device (kMatmulPeakCuda, kMatmulPeakCpu, GFLOP/s).
// The collector stores them; a trial diagnosed as it ends reads the same.
std::vector<std::pair<std::string, double>> warmup_end_stats(const Json& snapshot);
std::vector<std::pair<std::string, double>> matmul_peak_stats(const Json& matmul);

// The breakdown of a recorded trial: exact when it holds the end-of-warmup
// totals (kWarmupEndPrefix), else approximate (see PhaseBreakdown). The
// device's busy share from CUDA's activity records (gpu_busy_share) where
// the trial has them, else NVML's utilisation over the measured blocks.
PhaseBreakdown breakdown_from_record(const TrialRecordView& trial);

enum class Bottleneck { input, sync, overhead, compute, memory, communication };
const char* bottleneck_name(Bottleneck b);  // "input-bound", "sync-bound", ...

struct Diagnosis {
  Bottleneck bottleneck = Bottleneck::compute;
  std::string why;                  // the numbers behind the verdict
  std::vector<std::string> notes;   // secondary observations
  std::vector<std::string> advice;  // what helps, in words (settings or not)
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
  std::string workload;
  bool manifest_known = true;  // the plugin was at hand: grid and sweep were checked against it
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

// Diagnoses a recorded trial of workload. With the plugin's manifest the
// report carries a suggested sweep (over the trial's config); without it
// the advice is text only. Nothing, with why, when the trial holds no phase
// timings.
// base: the suggested sweep's base; by default the settings the trial ran
// that differ from the plugin's defaults (and its device).
std::optional<DiagnoseReport> diagnose_record(const std::string& workload,
                                              const TrialRecordView& trial, double throughput,
                                              const std::string& unit,
                                              const PluginManifest* manifest, std::string* why,
                                              const Json* base = nullptr);

}  // namespace gpusweep::host
