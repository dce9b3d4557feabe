// Step-time analysis and bottleneck classification; see diagnose.hpp.
#include "analysis/diagnose.hpp"

#include <gpusweep/plugin.h>

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
// Of the matmul peak: at or above, compute-bound; below the second,
// memory-bound (the arithmetic units wait for data).
constexpr double kComputeFraction = 0.5;
constexpr double kMemoryFraction = 0.25;

double delta(const Json& later, const Json& earlier, const std::string& key) {
  auto value = [&key](const Json& j) {
    if (!j.is_object()) return 0.0;
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  return std::max(0.0, value(later) - value(earlier));
}

std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", 100 * share);
  return buf;
}

}  // namespace

std::optional<double> PhaseBreakdown::achieved_flops() const {
  if (!flops_per_step || step_s <= 0) return std::nullopt;
  return *flops_per_step / step_s;
}

std::optional<double> PhaseBreakdown::peak_fraction() const {
  const auto achieved = achieved_flops();
  if (!achieved || !peak_flops || *peak_flops <= 0) return std::nullopt;
  return *achieved / *peak_flops;
}

PhaseBreakdown breakdown_from_stats(const Json& snapshot, const Json& final_stats, double steps,
                                    double seconds) {
  PhaseBreakdown b;
  if (steps <= 0) return b;
  b.step_s = seconds / steps;
  b.input_wait_s = delta(final_stats, snapshot, "phase_input_wait_s") / steps;
  b.host_to_device_s = delta(final_stats, snapshot, "phase_host_to_device_s") / steps;
  b.forward_s = delta(final_stats, snapshot, "phase_forward_s") / steps;
  b.backward_s = delta(final_stats, snapshot, "phase_backward_s") / steps;
  b.optimizer_s = delta(final_stats, snapshot, "phase_optimizer_s") / steps;
  b.host_sync_s = delta(final_stats, snapshot, "phase_host_sync_s") / steps;
  b.host_syncs_per_step = delta(final_stats, snapshot, "host_syncs") / steps;
  // The least any rank waited (what is communication, not imbalance), when
  // rank 0 summed the ranks up; else its own wait.
  if (final_stats.is_object() && final_stats.contains("dp_comm_exposed_measured_s") &&
      final_stats.at("dp_comm_exposed_measured_s").is_number()) {
    b.comm_exposed_s = final_stats.at("dp_comm_exposed_measured_s").get<double>() / steps;
  } else {
    b.comm_exposed_s = delta(final_stats, snapshot, "dp_comm_exposed_s") / steps;
  }
  const double timed = b.input_wait_s + b.host_to_device_s + b.forward_s + b.backward_s +
                       b.optimizer_s + b.host_sync_s;
  b.rest_s = std::max(0.0, b.step_s - timed);
  if (final_stats.is_object() && final_stats.contains("flops_per_step") &&
      final_stats.at("flops_per_step").is_number()) {
    b.flops_per_step = final_stats.at("flops_per_step").get<double>();
  }
  return b;
}

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

Diagnosis classify(const PhaseBreakdown& b) {
  Diagnosis d;
  const double step = b.step_s > 0 ? b.step_s : 1e-12;
  const double input_share = (b.input_wait_s + b.host_to_device_s) / step;
  const double sync_share = b.host_sync_s / step;
  const auto fraction = b.peak_fraction();
  if (b.host_syncs_per_step > 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%.2f host syncs per step (reads of device values), %s of the step",
                  b.host_syncs_per_step, pct(sync_share).c_str());
    d.notes.push_back(buf);
  }
  if (fraction) {
    d.notes.push_back("achieved " + pct(*fraction) + " of the measured matmul peak");
  }
  const double comm_share = b.comm_exposed_s / step;
  if (b.comm_exposed_s > 0) {
    d.notes.push_back("all-reduce not hidden behind backward: " + pct(comm_share) +
                      " of the step (within backward's " + pct(b.backward_s / step) + ")");
  }
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
  } else if (sync_share >= kSyncShare) {
    d.bottleneck = Bottleneck::sync;
    d.why = "reading device values back takes " + pct(sync_share) + " of the step (threshold " +
            pct(kSyncShare) + ")";
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
  } else if (b.rest_s / step >= 0.5) {
    d.bottleneck = Bottleneck::overhead;
    d.why = pct(b.rest_s / step) +
            " of the step is outside the forward, backward and optimiser "
            "(host-side glue and small ops)";
  } else {
    d.bottleneck = Bottleneck::compute;
    d.why = "forward, backward and optimiser take " +
            pct((b.forward_s + b.backward_s + b.optimizer_s) / step) + " of the step" +
            (fraction ? " at " + pct(*fraction) + " of the matmul peak"
                      : " (the plugin reports no FLOPs per step, so compute- and memory-bound "
                        "cannot be told apart)");
  }
  return d;
}

Json suggest_grid(const Diagnosis& d, const PluginManifest& manifest, const Json& config,
                  const TrialDevice& device) {
  Json grid = Json::object();
  const bool cuda = device.cuda;
  // bf16 and TF32 run on Tensor Cores from compute capability 8.0 (Ampere);
  // on an older or unknown GPU they are not suggested. On the CPU bf16 is.
  const bool tensor_cores = cuda && compute_capability(device) >= 8.0;
  const bool bf16 = !cuda || tensor_cores;
  // Values for one axis: the current value first, then the candidates the
  // setting accepts, each once.
  auto axis = [&](const std::string& key, std::vector<Json> candidates) {
    const ParamSpec* p = manifest.find(key);
    if (p == nullptr || !p->applies) return;
    std::vector<Json> values;
    const Json current = config.contains(key) ? config.at(key) : p->default_value;
    values.push_back(current);
    for (auto& c : candidates) {
      if (p->check(c)) continue;
      if (std::find(values.begin(), values.end(), c) == values.end()) values.push_back(c);
    }
    if (values.size() > 1) grid[key] = values;
  };
  const int64_t batch = config.value("batch_size", int64_t{1});
  switch (d.bottleneck) {
    case Bottleneck::input:
      axis("loader_workers", {1, 2, 4});
      if (cuda) {
        axis("pin_memory", {true});
        axis("non_blocking", {true});
      }
      break;
    case Bottleneck::sync:
      axis("sync_every", {10, 100});
      axis("replay_on_device", {true});
      break;
    case Bottleneck::overhead:
      axis("batch_size", {batch * 2, batch * 4, batch * 8});
      axis("num_envs", {8, 64});
      break;
    case Bottleneck::compute:
      if (bf16) axis("precision", {"bf16"});
      if (tensor_cores) axis("tf32", {true});
      axis("channels_last", {true});
      axis("threads", {1, 2});
      break;
    case Bottleneck::memory:
      if (bf16) axis("precision", {"bf16"});
      axis("channels_last", {true});
      axis("batch_size", {batch * 2, batch * 4});
      break;
    case Bottleneck::communication:
      // More compute per all-reduce (a larger batch a rank, or one all-reduce
      // per several micro-batches), buckets that start sooner or cost fewer
      // launches, fewer ranks.
      axis("batch_size", {batch * 2, batch * 4});
      axis("grad_accum", {2, 4});
      axis("dp_bucket_mb", {1.0, 100.0});
      axis("world_size", {1});
      break;
  }
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
  static const char* const kSuffix[] = {"input",   "sync",   "overhead",
                                        "compute", "memory", "communication"};
  return {
      {"name", spec.workload + "_" + kSuffix[static_cast<int>(d.bottleneck)]},
      {"workload", spec.workload},
      {"description", "suggested by gpusweep diagnose: " +
                          std::string(bottleneck_name(d.bottleneck)) + ", " + d.why},
      {"base", base},
      {"grid", grid},
      {"measure", {{"warmup_steps", 10}, {"steps_per_block", 20}, {"blocks", 5}, {"repeats", 1}}},
      {"baseline", baseline}};
}

}  // namespace

std::optional<DiagnoseReport> diagnose_trial(const SweepSpec& spec, const PluginManifest& manifest,
                                             const Json& config, const db::TrialOutcome& outcome,
                                             const TrialReadings& readings, std::string* why) {
  const Json& stats = readings.stats;
  if (!stats.is_object() ||
      (!stats.contains("phase_forward_s") && !stats.contains("phase_input_wait_s"))) {
    *why = "plugin " + spec.workload +
           " reported no phase timings: it offers no phase timers (the ABI 1.1 "
           "extension " GPUSWEEP_EXT_PHASE_TIMERS
           ", which torchkit's plugins have); only the step time is known";
    return std::nullopt;
  }
  double steps = 0, seconds = 0;
  for (const auto& b : outcome.blocks) {
    steps += static_cast<double>(b.steps);
    seconds += b.seconds;
  }
  DiagnoseReport r;
  PhaseBreakdown& b = r.breakdown;
  b = breakdown_from_stats(readings.stats_snapshot, stats, steps, seconds);
  const TrialDevice device = trial_device(config, readings.runtime);
  b.cuda = device.cuda;
  if (readings.matmul.is_array()) {
    for (const auto& m : readings.matmul) {
      const bool on_cuda = m.value("device", "").rfind("cuda", 0) == 0;
      if (on_cuda == b.cuda) b.peak_flops = m.value("gflops", 0.0) * 1e9;
    }
  }
  r.diagnosis = classify(b);
  if (outcome.summary) {
    r.throughput = outcome.summary->throughput_median;
    r.unit = outcome.summary->unit;
  }
  r.grid = suggest_grid(r.diagnosis, manifest, config, device);
  if (!r.grid.empty()) {
    r.suggested_sweep = suggested_sweep(spec, r.diagnosis, r.grid);
    // Ready to run means valid: checked as `run` will check it.
    validate_sweep(parse_sweep(r.suggested_sweep.dump(), "suggested sweep"), manifest);
  }
  return r;
}

}  // namespace gpusweep::host
