// What a trial recorded about its step, for diagnose: the phase breakdown
// from a trial's stats and snapshots, and a stored trial loaded to be
// diagnosed again; see diagnose.hpp.
#include "analysis/diagnose.hpp"

#include "spec/stats.hpp"
#include "support/error.hpp"

#include <gpusweep/stat_names.hpp>

#include <algorithm>
#include <cstdio>

namespace gpusweep::host {

namespace {

double delta(const Json& later, const Json& earlier, const std::string& key) {
  auto value = [&key](const Json& j) {
    if (!j.is_object()) return 0.0;
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  return std::max(0.0, value(later) - value(earlier));
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
  b.measured_steps = static_cast<int64_t>(steps);
  b.step_s = seconds / steps;
  b.input_wait_s = delta(final_stats, snapshot, stat::phase_input_wait_s) / steps;
  b.host_to_device_s = delta(final_stats, snapshot, stat::phase_host_to_device_s) / steps;
  b.forward_s = delta(final_stats, snapshot, stat::phase_forward_s) / steps;
  b.backward_s = delta(final_stats, snapshot, stat::phase_backward_s) / steps;
  b.optimizer_s = delta(final_stats, snapshot, stat::phase_optimizer_s) / steps;
  b.host_sync_s = delta(final_stats, snapshot, stat::phase_host_sync_s) / steps;
  b.host_syncs_per_step = delta(final_stats, snapshot, stat::host_syncs) / steps;
  // The least any rank waited (what is communication, not imbalance), when
  // rank 0 summed the ranks up; else its own wait.
  if (final_stats.is_object() && final_stats.contains(stat::dp_comm_exposed_measured_s) &&
      final_stats.at(stat::dp_comm_exposed_measured_s).is_number()) {
    b.comm_exposed_s = final_stats.at(stat::dp_comm_exposed_measured_s).get<double>() / steps;
  } else {
    b.comm_exposed_s = delta(final_stats, snapshot, stat::dp_comm_exposed_s) / steps;
  }
  const double timed = b.input_wait_s + b.host_to_device_s + b.forward_s + b.backward_s +
                       b.optimizer_s + b.host_sync_s;
  b.rest_s = std::max(0.0, b.step_s - timed);
  if (final_stats.is_object() && final_stats.contains(stat::flops_per_step) &&
      final_stats.at(stat::flops_per_step).is_number()) {
    b.flops_per_step = final_stats.at(stat::flops_per_step).get<double>();
  }
  return b;
}

namespace {

std::optional<double> stat_of(const std::map<std::string, double>& stats, const std::string& name) {
  auto it = stats.find(name);
  if (it == stats.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<std::pair<std::string, double>> warmup_end_stats(const Json& snapshot) {
  std::vector<std::pair<std::string, double>> out;
  if (!snapshot.is_object()) return out;
  for (const auto& [name, value] : snapshot.items()) {
    if (value.is_number() && (name.rfind("phase_", 0) == 0 || name == stat::host_syncs)) {
      out.emplace_back(kWarmupEndPrefix + name, value.get<double>());
    }
  }
  return out;
}

std::vector<std::pair<std::string, double>> matmul_peak_stats(const Json& matmul) {
  std::vector<std::pair<std::string, double>> out;
  if (!matmul.is_array()) return out;
  for (const auto& m : matmul) {
    if (!m.is_object() || !m.contains("gflops") || !m.at("gflops").is_number()) continue;
    const bool cuda = m.value("device", std::string()).rfind("cuda", 0) == 0;
    out.emplace_back(cuda ? kMatmulPeakCuda : kMatmulPeakCpu, m.at("gflops").get<double>());
  }
  return out;
}

PhaseBreakdown breakdown_from_record(const TrialRecordView& trial) {
  double steps = 0, seconds = 0;
  for (const auto& b : trial.blocks) {
    steps += static_cast<double>(b.steps);
    seconds += b.seconds;
  }
  Json final_stats = Json::object();
  Json snapshot = Json::object();
  const std::string prefix = kWarmupEndPrefix;
  for (const auto& [name, value] : trial.stats) {
    if (name.rfind(prefix, 0) == 0) {
      snapshot[name.substr(prefix.size())] = value;
    } else {
      final_stats[name] = value;
    }
  }
  PhaseBreakdown b;
  if (!snapshot.empty() || trial.warmup_steps <= 0 || steps <= 0) {
    b = breakdown_from_stats(snapshot, final_stats, steps, seconds);
  } else {
    // Totals since the first step: spread over every step, warmup's too, at
    // the measured step time.
    const double all = steps + static_cast<double>(trial.warmup_steps);
    b = breakdown_from_stats(Json::object(), final_stats, all, all * seconds / steps);
    b.approximate = true;
    b.measured_steps = static_cast<int64_t>(steps);
    // The first steps' one-off costs (CUDA's context, cuDNN's and cuBLAS's
    // set-up) land in the compute phases and the first sync: where the
    // phases then add up past the step, those are scaled down to what is
    // left beside the input, which is steady from the first step. The count
    // of syncs includes setup's and evaluation's reads: unknown per step.
    double* compute[] = {&b.forward_s, &b.backward_s, &b.optimizer_s, &b.host_sync_s};
    double compute_sum = 0;
    for (double* p : compute) compute_sum += *p;
    const double room = std::max(0.0, b.step_s - b.input_wait_s - b.host_to_device_s);
    if (compute_sum > room && compute_sum > 0) {
      for (double* p : compute) *p *= room / compute_sum;
    }
    b.rest_s =
        std::max(0.0, b.step_s - b.input_wait_s - b.host_to_device_s - std::min(compute_sum, room));
    b.host_syncs_per_step = 0;
  }
  b.cuda = trial_device(trial.config, trial.runtime).cuda;
  HostStatValues host;  // the host's own stats among the trial's, typed
  for (const auto& [name, value] : trial.stats) host.set(name, value);
  b.peak_flops = b.cuda ? host.matmul_peak_gflops_cuda : host.matmul_peak_gflops_cpu;
  if (b.peak_flops) *b.peak_flops *= 1e9;
  b.cpu_peak_flops = host.matmul_peak_gflops_cpu;
  if (b.cpu_peak_flops) *b.cpu_peak_flops *= 1e9;
  // The host's cores while measured steps ran; the whole life's mean (the
  // matmul probe's threads, CUDA's start, sync spins in a diagnose trial's
  // phase edges) only for trials recorded before that figure.
  b.host_cpu_cores = host.monitor_cpu_util_measured_mean;
  if (!b.host_cpu_cores) b.host_cpu_cores = host.monitor_cpu_util_mean;
  b.graphed = stat_of(trial.stats, stat::cuda_graphs_captured).value_or(0) > 0;  // torchkit's
  if (b.cuda) {
    auto samples = host.monitor_gpu_util_samples;
    if (!samples) samples = host.monitor_gpu_samples_measured;
    const auto util = host.monitor_gpu_device_util_mean;
    if (auto busy = host.gpu_busy_share) {
      b.device_busy_share = std::clamp(*busy, 0.0, 1.0);
      b.device_busy_source = "kernel time in CUDA's activity records";
    } else if (util && samples.value_or(0) >= 1) {
      b.device_busy_share = std::clamp(*util / 100, 0.0, 1.0);
      char buf[96];
      std::snprintf(buf, sizeof buf, "NVML utilisation over the measured blocks, %.0f sample%s",
                    *samples, *samples == 1 ? "" : "s");
      b.device_busy_source = buf;
    }
  }
  return b;
}

DiagnosedTrial load_diagnosed_trial(db::Store& store, int64_t trial_id) {
  const std::optional<db::TrialRecord> r = store.trial(trial_id);
  if (!r) {
    throw UsageError("--trial " + std::to_string(trial_id) + ": no such trial in " + store.path() +
                     " (`gpusweep results` lists them)");
  }
  DiagnosedTrial t;
  t.workload = r->plan.workload;
  t.status = r->status;
  t.error = r->error.value_or("");
  t.view.config = Json::parse(r->plan.config_json);
  if (r->summary) {
    t.throughput = r->summary->throughput_median;
    t.unit = r->summary->unit;
    t.view.warmup_steps = r->summary->warmup_steps;
  }
  if (const auto env = r->environment_id ? store.environment(*r->environment_id) : std::nullopt) {
    const Json details = Json::parse(env->details_json, nullptr, false);
    if (details.is_object() && details.contains("runtime")) t.view.runtime = details.at("runtime");
  }
  t.view.blocks = store.blocks(trial_id);
  for (const auto& m : store.metrics(trial_id)) {
    if (m.kind == "stat" && m.at_step == 0) t.view.stats[m.name] = m.value;
  }
  return t;
}

}  // namespace gpusweep::host
