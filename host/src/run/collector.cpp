// Trial outcome assembly; see collector.hpp.
#include "run/collector.hpp"
#include "analysis/diagnose.hpp"
#include "protocol/event_payloads.hpp"
#include "protocol/events.hpp"
#include "run/block_sample.hpp"
#include "spec/stats.hpp"

#include "spec/hashing.hpp"
#include "support/descriptive.hpp"
#include "support/procfs.hpp"
#include "support/spawn.hpp"
#include "support/version.hpp"

#include <gpusweep/runtime_info.hpp>
#include <gpusweep/stat_names.hpp>

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <thread>

namespace gpusweep::host {

namespace {

std::optional<double> number(const Json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

// Which cap the trial ran under, as stats: its device's allocator, or its
// address space.
std::vector<std::pair<std::string, double>> memory_cap_stats(const event::MemoryCap& cap) {
  const bool device = cap.kind == "device";
  std::vector<std::pair<std::string, double>> stats;
  if (cap.cap_bytes && std::isfinite(*cap.cap_bytes)) {
    stats.emplace_back(
        device ? host_stat::memory_cap_device_bytes : host_stat::memory_cap_address_space_bytes,
        *cap.cap_bytes);
  }
  if (device && cap.fraction && std::isfinite(*cap.fraction)) {
    stats.emplace_back(host_stat::memory_cap_device_fraction, *cap.fraction);
  }
  return stats;
}

std::string read_first_line_with(const std::string& path, const std::string& prefix) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return {};
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t:\"");
  const auto e = s.find_last_not_of(" \t\"");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

std::optional<event::Event> TrialCollector::on_line(const std::string& line) {
  if (line.empty()) return std::nullopt;
  Json json;
  try {
    json = Json::parse(line);
  } catch (const Json::parse_error&) {
    ++malformed_lines_;
    return std::nullopt;
  }
  if (!json.is_object()) {
    ++malformed_lines_;
    return std::nullopt;
  }
  auto e = event::decode(json);
  on_event(e);
  return e;
}

void TrialCollector::on_event(const event::Event& e) {
  std::visit([this](const auto& payload) { on(payload); }, e);
}

void TrialCollector::on(const event::Phase& e) {
  if (e.phase) phase_ = *e.phase;
}

void TrialCollector::on(const event::Loaded& e) {
  if (!e.runtime.empty()) runtime_ = e.runtime;
}

void TrialCollector::on(const event::Runtime& e) {
  if (e.runtime.is_object() && !e.runtime.empty()) runtime_ = e.runtime;
  if (e.setup_s) setup_s_ = e.setup_s;
}

void TrialCollector::on(const event::Block& e) {
  db::BlockSample b = block_sample(e);
  b.cycle = cycle_;
  blocks_seconds_ += b.seconds;
  blocks_.push_back(b);
}

void TrialCollector::on(const event::Eval& e) {
  evaluate_s_ += e.seconds;
  if (e.metrics.is_object()) {
    last_eval_ = e.metrics;
    for (const auto& [name, value] : e.metrics.items()) {
      if (value.is_number()) metrics_.push_back({"eval", e.at_step, name, value.get<double>()});
    }
  }
  // Under measure.target, the curve's clock beside its metrics: the
  // training seconds and samples at this evaluation.
  if (e.train_s) {
    metrics_.push_back({"eval", e.at_step, std::string(kCurvePrefix) + "train_s", *e.train_s});
  }
  if (e.samples) {
    metrics_.push_back({"eval", e.at_step, std::string(kCurvePrefix) + "samples", *e.samples});
  }
}

void TrialCollector::on(const event::Target& e) {
  // Time to quality: the time (interpolated, or a lower bound when
  // censored) and what it rests on.
  if (e.time_s) metrics_.push_back({"stat", 0, host_stat::target_time_s, *e.time_s});
  metrics_.push_back({"stat", 0, host_stat::target_censored, e.reached ? 0.0 : 1.0});
  if (e.diverged) metrics_.push_back({"stat", 0, host_stat::target_diverged, 1.0});
  // Stopped by measure.target.cap (adaptive capping), not its own budget.
  if (e.capped) metrics_.push_back({"stat", 0, host_stat::target_capped, 1.0});
  metrics_.push_back({"stat", 0, host_stat::target_train_s, e.train_s});
  if (e.cap_s) metrics_.push_back({"stat", 0, host_stat::target_cap_s, *e.cap_s});
  metrics_.push_back({"stat", 0, host_stat::target_eval_s, e.eval_s});
  metrics_.push_back(
      {"stat", 0, host_stat::target_evaluations, static_cast<double>(e.evaluations)});
  metrics_.push_back({"stat", 0, host_stat::target_steps, static_cast<double>(e.at_step)});
}

void TrialCollector::on(const event::WarmupDone& e) {
  // The transient, apart from the steady state the blocks measure.
  auto add = [this](const char* name, std::optional<double> v) {
    if (v) metrics_.push_back({"stat", 0, name, *v});
  };
  add(host_stat::warmup_s, e.seconds);
  add(host_stat::first_step_s, e.first_step_s);
  // measure.block_s: the steps per block the worker chose.
  if (e.block_steps) add(host_stat::block_steps, static_cast<double>(*e.block_steps));
  // The device's busy share over a block of warmup steps (activity records).
  add(host_stat::gpu_busy_share, e.gpu_busy_share);
  if (e.windows) {
    add(host_stat::warmup_windows, static_cast<double>(e.windows->size()));
    add(host_stat::warmup_stable, e.stable ? 1.0 : 0.0);
  }
}

void TrialCollector::on(const event::StatsSnapshot& e) {
  if (e.stats.empty()) return;
  warmup_stats_ = e.stats;
  // Diagnose's phase totals here: `diagnose --db --trial` counts the
  // measured steps alone from the database.
  add_stats(warmup_end_stats(e.stats));
}

void TrialCollector::on(const event::Probe& e) {
  // A diagnose trial's peaks.
  add_stats(matmul_peak_stats(e.matmul.value_or(Json())));
}

void TrialCollector::on(const event::Stats& e) {
  if (e.stats.empty()) return;
  stats_ = e.stats;
  for (const auto& [name, value] : stats_.items()) {
    if (value.is_number()) metrics_.push_back({"stat", 0, name, value.get<double>()});
  }
}

void TrialCollector::on(const event::MemoryCap& e) { add_stats(memory_cap_stats(e)); }

void TrialCollector::on(const event::Result& e) { result_ = e; }

void TrialCollector::add_stats(const std::vector<std::pair<std::string, double>>& stats) {
  for (const auto& [name, value] : stats) metrics_.push_back({"stat", 0, name, value});
}

db::Summary summarize(const PluginManifest& manifest, const MeasureSpec& measure,
                      const std::vector<db::BlockSample>& blocks, const Json& last_eval,
                      const Json& stats, const Json& warmup_stats) {
  db::Summary s;
  s.unit = manifest.unit;
  s.secondary_unit = manifest.secondary_unit;
  s.warmup_steps = measure.warmup_steps;
  // The blocks' own steps: under measure.block_s each trial sizes its blocks.
  s.steps_per_block = blocks.empty() ? measure.steps_per_block : blocks.front().steps;
  s.blocks = static_cast<int64_t>(blocks.size());
  std::vector<double> throughput, secondary, step_time;
  double samples = 0, steps = 0;
  for (const auto& b : blocks) {
    const auto t = db::block_throughput(b);
    if (!t) continue;  // a block that ran nothing measures nothing
    throughput.push_back(*t);
    secondary.push_back(b.secondary_samples / b.seconds);
    step_time.push_back(*db::block_step_time(b));
    samples += b.samples;
    steps += static_cast<double>(b.steps);
  }
  if (!throughput.empty()) {
    const Distribution t = describe(throughput);
    s.throughput_median = t.median;
    s.throughput_mean = t.mean;
    s.throughput_min = t.min;
    s.throughput_max = t.max;
    s.throughput_iqr = t.iqr;
    s.throughput_cv = t.cv;
    const Distribution st = describe(step_time);
    s.step_time_median_s = st.median;
    s.step_time_min_s = st.min;
    s.step_time_max_s = st.max;
    s.samples_per_step = steps > 0 ? samples / steps : 0;
    if (!manifest.secondary_unit.empty())
      s.secondary_throughput_median = describe(secondary).median;
  }
  s.peak_memory_bytes = number(stats, stat::peak_memory_bytes);
  if (auto wait = number(stats, stat::input_wait_s)) {
    // The plugin counts its input wait from the start; what warmup waited
    // (the snapshot after it) is not part of the measured blocks. The
    // evaluations call no loader, so the rest is the blocks'.
    const double measured_wait = *wait - number(warmup_stats, stat::input_wait_s).value_or(0);
    double total = 0;
    for (const auto& b : blocks) total += b.seconds;
    if (total > 0) s.input_wait_fraction = std::max(0.0, measured_wait) / total;
  }
  if (!manifest.quality_metric.empty()) {
    s.quality_metric = manifest.quality_metric;
    s.quality_higher_is_better = manifest.higher_is_better;
    s.quality = number(last_eval, manifest.quality_metric);
    if (!manifest.quality_reference.empty()) {
      s.quality_reference = number(last_eval, manifest.quality_reference);
    }
  }
  return s;
}

void add_device_clock_stats(const std::vector<db::BlockSample>& blocks,
                            std::vector<db::MetricSample>& metrics) {
  double host = 0, device = 0;
  int64_t timed = 0, disagree = 0;
  for (const auto& b : blocks) {
    if (!b.device_seconds || b.seconds <= 0) continue;
    ++timed;
    host += b.seconds;
    device += *b.device_seconds;
    if (std::fabs(*b.device_seconds - b.seconds) > kClockTolerance * b.seconds) ++disagree;
  }
  if (timed == 0) return;
  metrics.push_back({"stat", 0, host_stat::device_time_fraction, device / host});
  metrics.push_back(
      {"stat", 0, host_stat::clock_disagreeing_blocks, static_cast<double>(disagree)});
}

void add_data_parallel_stats(const Json& stats, const Json& warmup_stats,
                             const std::vector<db::BlockSample>& blocks,
                             std::vector<db::MetricSample>& metrics) {
  double total = 0;
  for (const auto& b : blocks) total += b.seconds;
  if (total <= 0) return;
  // The measured blocks' communication (the least any rank waited) and
  // imbalance, from rank 0's summary; else rank 0's own wait since warmup.
  if (const auto comm = number(stats, stat::dp_comm_exposed_measured_s)) {
    metrics.push_back({"stat", 0, host_stat::dp_comm_share, std::max(0.0, *comm) / total});
    if (const auto imbalance = number(stats, stat::dp_imbalance_s)) {
      metrics.push_back(
          {"stat", 0, host_stat::dp_imbalance_share, std::max(0.0, *imbalance) / total});
    }
    return;
  }
  const auto exposed = number(stats, stat::dp_comm_exposed_s);
  if (!exposed) return;
  const double measured = *exposed - number(warmup_stats, stat::dp_comm_exposed_s).value_or(0);
  metrics.push_back({"stat", 0, host_stat::dp_comm_share, std::max(0.0, measured) / total});
}

void add_quality_se(const PluginManifest& manifest, const Json& last_eval,
                    std::vector<db::MetricSample>& metrics) {
  if (manifest.quality_metric.empty()) return;
  if (auto se = number(last_eval, manifest.quality_metric + "_se")) {
    metrics.push_back({"stat", 0, host_stat::quality_se, *se});
  }
}

std::string TrialCollector::timeout_error(const ExitInfo& exit) const {
  char buf[64];
  const std::string where = "phase " + std::string(phase_name(phase_)) + ", " +
                            std::to_string(blocks_.size()) + " blocks done";
  if (exit.silent_s > 0) {
    std::snprintf(buf, sizeof buf, "%.1f", exit.silent_s);
    return "worker silent for " + std::string(buf) + " s (no heartbeat; " + where +
           "): the process was stopped or wedged, not merely slow; measure.silence_s sets the "
           "grace period";
  }
  std::snprintf(buf, sizeof buf, "%g", exit.timeout_s);
  return "no result within timeout_s=" + std::string(buf) + " s (" + where +
         "); raise measure.timeout_s if the workload is just slow";
}

void TrialCollector::add_derived_stats(std::vector<db::MetricSample>& metrics) const {
  add_device_clock_stats(blocks_, metrics);
  add_data_parallel_stats(stats_, warmup_stats_, blocks_, metrics);
  add_quality_se(manifest_, last_eval_, metrics);
}

db::TrialOutcome TrialCollector::finish(const ExitInfo& exit, const std::string& stderr_tail,
                                        int64_t stderr_bytes) const {
  db::TrialOutcome o;
  o.stderr_tail = stderr_tail;
  o.stderr_bytes = stderr_bytes;
  if (exit.exit_code) o.exit_code = *exit.exit_code;
  if (exit.signal) o.signal = *exit.signal;
  o.blocks = blocks_;
  o.metrics = metrics_;
  add_derived_stats(o.metrics);
  o.environment = make_environment(runtime_);

  auto with_stderr_hint = [&](std::string msg) {
    if (!stderr_tail.empty()) {
      // The last non-empty line of stderr usually says what went wrong.
      auto end = stderr_tail.find_last_not_of("\n\r ");
      if (end != std::string::npos) {
        auto begin = stderr_tail.rfind('\n', end);
        begin = begin == std::string::npos ? 0 : begin + 1;
        msg += "; stderr: " + stderr_tail.substr(begin, std::min<size_t>(end - begin + 1, 300));
      }
    }
    return msg;
  };

  if (exit.interrupted) {
    o.status = db::TrialStatus::interrupted;
    o.error = std::string("interrupted by the user during ") + phase_name(phase_);
  } else if (exit.silent_s > 0 || exit.timed_out) {
    o.status = db::TrialStatus::timeout;
    o.error = timeout_error(exit);
  } else if (result_) {
    // The worker's word for how the plugin's call ended (ok, failed, oom,
    // skipped; crashed: another rank of a data-parallel trial died); anything
    // else is a worker this host does not understand.
    const event::Result& result = *result_;
    const auto said = db::parse_trial_status(result.status);
    const bool a_result = said == db::TrialStatus::ok || said == db::TrialStatus::failed ||
                          said == db::TrialStatus::oom || said == db::TrialStatus::skipped ||
                          said == db::TrialStatus::crashed;
    o.status = a_result ? *said : db::TrialStatus::failed;
    if (o.status != db::TrialStatus::ok) {
      o.error = result.message.value_or("no message");
      if (result.phase && o.status != db::TrialStatus::skipped)
        *o.error += std::string(" (during ") + phase_name(*result.phase) + ")";
    }
  } else if (exit.signal && *exit.signal == SIGKILL && exit.oom_kills > 0) {
    // A SIGKILL the host did not send while the cgroup's OOM killer killed.
    o.status = db::TrialStatus::oom;
    o.error = "worker killed by the kernel's OOM killer during " + std::string(phase_name(phase_)) +
              " (SIGKILL; the memory cgroup counted " + std::to_string(exit.oom_kills) +
              " OOM kill(s) meanwhile): the machine or the job's memory limit ran out; lower "
              "batch_size, or set measure.max_memory so that the trial fails inside the plugin";
  } else if (exit.signal) {
    o.status = db::TrialStatus::crashed;
    o.error = with_stderr_hint("worker killed by " + signal_description(*exit.signal) + " during " +
                               phase_name(phase_));
  } else {
    o.status = db::TrialStatus::crashed;
    o.error =
        with_stderr_hint("worker exited with code " + std::to_string(exit.exit_code.value_or(-1)) +
                         " before reporting a result (during " + phase_name(phase_) + ")");
  }
  if (o.status == db::TrialStatus::ok) {
    if (blocks_.empty()) {
      o.status = db::TrialStatus::failed;
      o.error = "worker reported ok without any measured block";
    } else {
      o.summary = summarize(manifest_, measure_, blocks_, last_eval_, stats_, warmup_stats_);
      o.summary->setup_s = setup_s_;
      o.summary->evaluate_s = evaluate_s_;
    }
  }
  if (malformed_lines_ > 0 && o.error) {
    *o.error += " (" + std::to_string(malformed_lines_) + " malformed protocol lines ignored)";
  }
  return o;
}

db::EnvironmentInfo make_environment(const Json& runtime) {
  db::EnvironmentInfo e;
  e.hostname = host_name();
  utsname u{};
  uname(&u);
  std::string pretty = trim(read_first_line_with("/etc/os-release", "PRETTY_NAME="));
  e.os = (pretty.empty() ? std::string(u.sysname) : pretty) + " / " + u.sysname + " " + u.release +
         " " + u.machine;
  e.cpu_model = trim(read_first_line_with("/proc/cpuinfo", "model name"));
  e.cpu_cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  const auto r = RuntimeInfo::from_json(runtime);
  e.torch_version = r.torch_version.value_or("");
  e.blas = r.blas.value_or("");
  e.threads = r.threads.value_or(0);
  e.cuda_available = r.cuda_available.value_or(false);
  e.gpus_json = r.devices ? r.devices->dump() : "[]";
  e.gpusweep_version = build::version();
  e.git_commit = build::git_commit();
  Json details = {{"hostname", e.hostname},
                  {"os", e.os},
                  {"cpu_model", e.cpu_model},
                  {"cpu_cores", e.cpu_cores},
                  {"gpusweep_version", e.gpusweep_version},
                  {"git_commit", e.git_commit},
                  {"runtime", runtime}};
  e.details_json = details.dump();
  e.fingerprint = hash_text(e.details_json);
  return e;
}

}  // namespace gpusweep::host
