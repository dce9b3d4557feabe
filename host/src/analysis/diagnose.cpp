// Step-time analysis and bottleneck classification; see diagnose.hpp.
#include "analysis/diagnose.hpp"

#include "support/error.hpp"

#include <gpusweep/stat_names.hpp>

#include <gpusweep/plugin.h>
#include <gpusweep/common_settings.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpusweep::host {

namespace {

// A phase is the bottleneck when it takes at least this share of the step.
constexpr double kInputShare = 0.30;
constexpr double kSyncShare = 0.20;
// A data-parallel step spending this share in all-reduce that backward did
// not hide is communication-bound.
constexpr double kCommShare = 0.30;
// Steps this short are dominated by per-op dispatch (and kernel launches).
constexpr double kOverheadStepS = 2e-3;
// A device busy less than this share of the step waits for its host: the
// step is launch/overhead-bound (or host-bound), whatever its phase split.
constexpr double kDeviceBusyShare = 0.5;
// Of the device's matmul peak: below it, a device step with FLOPs does too
// little arithmetic for its time to be the arithmetic's (memory-bound
// kernels still reach more); its time goes to launches and the host.
constexpr double kLaunchFraction = 0.01;
// The host thread counts as saturated (host-bound) at this many cores.
constexpr double kHostBusyCores = 0.9;
// What share of the CPU's matmul peak a small model's step reaches there,
// for the estimate of whether the CPU would run it faster.
constexpr double kCpuEfficiency = 0.1;
// Of the matmul peak: at or above, compute-bound; below the second,
// memory-bound (the arithmetic units wait for data).
constexpr double kComputeFraction = 0.5;
constexpr double kMemoryFraction = 0.25;

std::string pct(double share) {
  char buf[32];
  // Shares under 1% keep two significant digits (0.006% of a peak is not 0%).
  std::snprintf(buf, sizeof buf, share > 0 && share < 0.01 ? "%.2g%%" : "%.0f%%", 100 * share);
  return buf;
}

}  // namespace

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::input:
      return "input-bound";
    case Bottleneck::sync:
      return "sync-bound";
    case Bottleneck::overhead:
      return "launch/overhead-bound";
    case Bottleneck::compute:
      return "compute-bound";
    case Bottleneck::memory:
      return "memory-bound";
    case Bottleneck::communication:
      return "communication-bound";
  }
  return "?";
}

namespace {

std::string rate_text(double flops) {
  char buf[48];
  if (flops >= 1e12) {
    std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", flops / 1e12);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GFLOP/s", flops / 1e9);
  }
  return buf;
}

std::string time_text(double s) {
  char buf[32];
  if (s >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  }
  return buf;
}

// Why a device step is launch/overhead-bound: its device idles, or its
// arithmetic is a sliver of the peak.
std::string launch_why(const PhaseBreakdown& b, std::optional<double> fraction) {
  std::string why;
  if (b.device_busy_share) {
    why = "the device is busy only " + pct(*b.device_busy_share) + " of the step (" +
          b.device_busy_source + ")";
  } else {
    why = "the step reaches only " + pct(*fraction) + " of the device's matmul peak";
  }
  if (fraction && b.device_busy_share) {
    why += " and reaches " + pct(*fraction) + " of its matmul peak";
  }
  if (fraction) {
    why += " (" + rate_text(*b.achieved_flops()) + " of " + rate_text(*b.peak_flops) + ")";
  }
  if (b.host_cpu_cores && *b.host_cpu_cores >= kHostBusyCores) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * *b.host_cpu_cores);
    why += std::string(" while the host runs ") + buf +
           " of a core: host-bound, the time goes to launching many small kernels and the host "
           "code between them";
  } else {
    why += ": its time goes to kernel launches and host code, not to arithmetic";
  }
  return why;
}

// What helps a launch/overhead-bound step, in words.
std::vector<std::string> launch_advice(const PhaseBreakdown& b) {
  std::vector<std::string> advice;
  if (b.cuda && !b.graphed) {
    advice.push_back(
        "CUDA graphs: capture the step's kernels once and replay them with one launch "
        "(cuda_graphs=true, where the workload has opted in; torch.cuda.graphs or "
        "torch.compile mode=\"reduce-overhead\" in a script of your own)");
  }
  advice.push_back(
      "more work per launch: a larger batch, or more environments per step (batch_size, "
      "num_envs)");
  if (b.host_syncs_per_step > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", b.host_syncs_per_step);
    advice.push_back(std::string("fewer host syncs (sync_every; data kept on the device): ") +
                     "each read of a device value drains the launch queue (" + buf +
                     " a step now)");
  }
  if (b.cuda) {
    advice.push_back(
        "fused optimisers: one kernel for all parameters (torchkit's FusedAdam, FusedAdamW) "
        "instead of several per tensor");
  }
  if (b.cuda && b.flops_per_step && b.cpu_peak_flops && *b.cpu_peak_flops > 0) {
    const double cpu_step = *b.flops_per_step / (kCpuEfficiency * *b.cpu_peak_flops);
    if (cpu_step < b.step_s) {
      advice.push_back("the CPU may run this model faster: at a tenth of its matmul peak (" +
                       rate_text(*b.cpu_peak_flops) + ") this step's arithmetic takes about " +
                       time_text(cpu_step) + ", against " + time_text(b.step_s) +
                       " a step here; try device=cpu");
    }
  }
  return advice;
}

// The secondary observations beside the verdict.
std::vector<std::string> notes_of(const PhaseBreakdown& b) {
  std::vector<std::string> notes;
  const double step = b.step_s > 0 ? b.step_s : 1e-12;
  if (b.host_syncs_per_step > 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%.2f host syncs per step (reads of device values), %s of the step",
                  b.host_syncs_per_step, pct(b.host_sync_s / step).c_str());
    notes.push_back(buf);
  }
  if (const auto fraction = b.peak_fraction()) {
    notes.push_back("achieved " + pct(*fraction) + " of the measured matmul peak");
  }
  if (b.device_busy_share) {
    notes.push_back("device busy " + pct(*b.device_busy_share) + " of the step (" +
                    b.device_busy_source + ")");
  }
  if (b.approximate) {
    notes.push_back(
        "the phases are whole-trial totals (warmup included) spread over every step, the compute "
        "phases scaled to fit the step: a trial recorded before the end-of-warmup totals were "
        "kept; the input share holds, the other phases are rough, syncs per step unknown");
  }
  if (b.comm_exposed_s > 0) {
    notes.push_back("all-reduce not hidden behind backward: " + pct(b.comm_exposed_s / step) +
                    " of the step (within backward's " + pct(b.backward_s / step) + ")");
  }
  return notes;
}

}  // namespace

Diagnosis classify(const PhaseBreakdown& b) {
  Diagnosis d;
  const double step = b.step_s > 0 ? b.step_s : 1e-12;
  const double input_share = (b.input_wait_s + b.host_to_device_s) / step;
  const double sync_share = b.host_sync_s / step;
  const auto fraction = b.peak_fraction();
  d.notes = notes_of(b);
  const double comm_share = b.comm_exposed_s / step;
  // On a device, a step whose device idles most of the time (or does a
  // sliver of its peak's arithmetic) is bound by its host, whatever the
  // phase split says: the phases are host time.
  const bool device_idle =
      b.cuda && ((b.device_busy_share && *b.device_busy_share < kDeviceBusyShare) ||
                 (fraction && *fraction < kLaunchFraction));
  if (comm_share >= kCommShare) {
    d.bottleneck = Bottleneck::communication;
    d.why = "the ranks wait " + pct(comm_share) +
            " of the step for the gradients' all-reduce after backward's compute is done "
            "(threshold " +
            pct(kCommShare) + ")";
  } else if (input_share >= kInputShare) {
    d.bottleneck = Bottleneck::input;
    d.why = "the step waits for input " + pct(input_share) + " of its time (input wait " +
            pct(b.input_wait_s / step) + ", host-to-device copies " +
            pct(b.host_to_device_s / step) + "; threshold " + pct(kInputShare) + ")";
  } else if (sync_share >= kSyncShare && !b.approximate) {
    d.bottleneck = Bottleneck::sync;
    d.why = "reading device values back takes " + pct(sync_share) + " of the step (threshold " +
            pct(kSyncShare) + ")";
  } else if (device_idle) {
    d.bottleneck = Bottleneck::overhead;
    d.why = launch_why(b, fraction);
  } else if (fraction && *fraction >= kComputeFraction) {
    d.bottleneck = Bottleneck::compute;
    d.why = "the step runs at " + pct(*fraction) + " of the machine's matmul peak (threshold " +
            pct(kComputeFraction) + ")";
  } else if (b.step_s < kOverheadStepS) {
    d.bottleneck = Bottleneck::overhead;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f us", b.step_s * 1e6);
    d.why = std::string("a step takes only ") + buf + ": its many small ops cost more in dispatch" +
            (b.cuda ? " and kernel launches" : "") + " than in arithmetic" +
            (fraction ? " (" + pct(*fraction) + " of the matmul peak)" : "");
  } else if (fraction && *fraction < kMemoryFraction) {
    d.bottleneck = Bottleneck::memory;
    d.why = "the compute phases dominate but reach only " + pct(*fraction) +
            " of the matmul peak: the arithmetic waits for memory (threshold " +
            pct(kMemoryFraction) + ")";
  } else if (!b.graphed && b.rest_s / step >= 0.5) {
    d.bottleneck = Bottleneck::overhead;
    d.why = pct(b.rest_s / step) +
            " of the step is outside the forward, backward and optimiser "
            "(host-side glue and small ops)";
  } else {
    d.bottleneck = Bottleneck::compute;
    std::string unknown;
    if (!b.flops_per_step) {
      unknown =
          " (the plugin reports no FLOPs per step, so compute- and memory-bound cannot be "
          "told apart)";
    } else if (!fraction) {
      unknown =
          " (no matmul peak of this device to compare its FLOP/s with, so compute- and "
          "memory-bound cannot be told apart: give --peak)";
    }
    d.why = (b.graphed
                 ? std::string("the step replays a CUDA graph, its forward, backward and "
                               "optimiser timed as one (not split into phases)")
                 : "forward, backward and optimiser take " +
                       pct((b.forward_s + b.backward_s + b.optimizer_s) / step) + " of the step") +
            (fraction ? " at " + pct(*fraction) + " of the matmul peak" : unknown);
  }
  if (d.bottleneck == Bottleneck::overhead) d.advice = launch_advice(b);
  return d;
}

namespace {

// The bottleneck as the settings' table names it ("input", "sync", ...).
const char* const kBottleneckKey[] = {"input",   "sync",   "overhead",
                                      "compute", "memory", "communication"};

// Suggestions for workload knobs that several plugins share by name (dqn's
// and marl's), beside the common settings' own (their table's `sweep`).
const std::vector<std::pair<std::string, SweepHint>>& knob_hints() {
  static const std::vector<std::pair<std::string, SweepHint>> hints = {
      {"replay_on_device", {"sync", {true}}},
      {"num_envs", {"overhead", {8, 64}}},
      {"replay_on_device", {"overhead", {true}, false, When::cuda}},
  };
  return hints;
}

}  // namespace

Json suggest_grid(const Diagnosis& d, const PluginManifest& manifest, const Json& config,
                  const TrialDevice& device) {
  Json grid = Json::object();
  const bool cuda = device.cuda;
  // bf16 and TF32 run on Tensor Cores from compute capability 8.0 (Ampere);
  // on an older or unknown GPU they are not suggested. On the CPU bf16 is.
  const bool tensor_cores = cuda && compute_capability(device) >= 8.0;
  auto holds = [&](When when) {
    switch (when) {
      case When::always:
        return true;
      case When::cuda:
        return cuda;
      case When::tensor_cores:
        return tensor_cores;
      case When::fast_bf16:
        return !cuda || tensor_cores;
    }
    return false;
  };
  // Values for one axis: the current value first, then the candidates the
  // setting accepts, each once.
  auto axis = [&](const std::string& key, const SweepHint& hint) {
    const ParamSpec* p = manifest.find(key);
    if (p == nullptr || !p->applies ||
        hint.bottleneck != kBottleneckKey[static_cast<int>(d.bottleneck)] || !holds(hint.when)) {
      return;
    }
    std::vector<Json> values =
        grid.contains(key) ? grid[key].get<std::vector<Json>>() : std::vector<Json>{};
    const Json current = config.contains(key) ? config.at(key) : p->default_value;
    if (values.empty()) values.push_back(current);
    for (Json c : hint.values) {
      if (hint.times_current) c = current.get<int64_t>() * c.get<int64_t>();
      if (p->check(c)) continue;
      if (std::find(values.begin(), values.end(), c) == values.end()) values.push_back(c);
    }
    if (values.size() > 1) grid[key] = values;
  };
  for (const auto& s : common_settings()) {
    for (const auto& hint : s.sweep) axis(s.name(), hint);
  }
  for (const auto& [knob, hint] : knob_hints()) axis(knob, hint);
  return grid;
}

namespace {

// The sweep file a diagnosis suggests: the diagnosed config as its base and
// baseline, the grid's axes, a short protocol.
Json suggested_sweep(const SweepSpec& spec, const Diagnosis& d, const Json& grid) {
  Json baseline = Json::object();
  for (const auto& [key, values] : grid.items()) baseline[key] = values.front();
  Json base = spec.base;
  for (const auto& [key, values] : grid.items()) base.erase(key);
  return {
      {"name", spec.workload + "_" + kBottleneckKey[static_cast<int>(d.bottleneck)]},
      {"workload", spec.workload},
      {"description", "suggested by gpusweep diagnose: " +
                          std::string(bottleneck_name(d.bottleneck)) + ", " + d.why},
      {"base", base},
      {"grid", grid},
      {"measure", {{"warmup_steps", 10}, {"steps_per_block", 20}, {"blocks", 5}, {"repeats", 1}}},
      {"baseline", baseline}};
}

}  // namespace

namespace {

bool has_phase_timings(const std::map<std::string, double>& stats) {
  return stats.count(stat::phase_forward_s) != 0U || stats.count(stat::phase_input_wait_s) != 0U;
}

std::string no_timings_why(const std::string& workload) {
  return "plugin " + workload +
         " reported no phase timings: it offers no phase timers (the ABI 1.1 "
         "extension " GPUSWEEP_EXT_PHASE_TIMERS
         ", which torchkit's plugins have); only the step time is known";
}

}  // namespace

std::optional<DiagnoseReport> diagnose_record(const std::string& workload,
                                              const TrialRecordView& trial, double throughput,
                                              const std::string& unit,
                                              const PluginManifest* manifest, std::string* why,
                                              const Json* base) {
  if (!has_phase_timings(trial.stats)) {
    *why = no_timings_why(workload);
    return std::nullopt;
  }
  DiagnoseReport r;
  r.workload = workload;
  r.breakdown = breakdown_from_record(trial);
  r.diagnosis = classify(r.breakdown);
  r.throughput = throughput;
  r.unit = unit;
  r.manifest_known = manifest != nullptr;
  if (manifest != nullptr) {
    const TrialDevice device = trial_device(trial.config, trial.runtime);
    r.grid = suggest_grid(r.diagnosis, *manifest, trial.config, device);
    if (!r.grid.empty()) {
      SweepSpec spec;
      spec.workload = workload;
      if (base != nullptr) {
        spec.base = *base;
      } else {
        // The settings the trial ran that differ from the plugin's defaults
        // (and its device): what a sweep file would have named.
        spec.base = Json::object();
        for (const auto& [key, value] : trial.config.items()) {
          const ParamSpec* p = manifest->find(key);
          if (p == nullptr || key == "device" || !(p->default_value == value)) {
            spec.base[key] = value;
          }
        }
      }
      r.suggested_sweep = suggested_sweep(spec, r.diagnosis, r.grid);
      // Ready to run means valid: checked as `run` will check it.
      validate_sweep(parse_sweep(r.suggested_sweep.dump(), "suggested sweep"), *manifest);
    }
  }
  return r;
}

std::optional<DiagnoseReport> diagnose_trial(const SweepSpec& spec, const PluginManifest& manifest,
                                             const Json& config, const db::TrialOutcome& outcome,
                                             const TrialReadings& readings, std::string* why) {
  // The trial as its record will hold it: one reading for a trial that just
  // ran and one recorded long ago.
  TrialRecordView trial;
  trial.config = config;
  trial.runtime = readings.runtime;
  trial.blocks = outcome.blocks;
  trial.warmup_steps = spec.measure.warmup_steps;
  for (const auto& m : outcome.metrics) {
    if (m.kind == "stat" && m.at_step == 0) trial.stats[m.name] = m.value;
  }
  if (readings.stats.is_object() && !has_phase_timings(trial.stats)) {
    for (const auto& [name, value] : readings.stats.items()) {
      if (value.is_number()) trial.stats[name] = value.get<double>();
    }
  }
  // What the collector stored of the snapshot and the probe, where the
  // outcome lacks it.
  for (const auto& [name, value] : warmup_end_stats(readings.stats_snapshot)) {
    trial.stats.emplace(name, value);
  }
  for (const auto& [name, value] : matmul_peak_stats(readings.matmul)) {
    trial.stats.emplace(name, value);
  }
  if (!has_phase_timings(trial.stats)) {
    *why = no_timings_why(spec.workload);
    return std::nullopt;
  }
  // The suggested sweep keeps the diagnosed sweep's base (the settings
  // given), not every resolved default.
  return diagnose_record(spec.workload, trial,
                         outcome.summary ? outcome.summary->throughput_median : 0,
                         outcome.summary ? outcome.summary->unit : "", &manifest, why, &spec.base);
}

}  // namespace gpusweep::host
