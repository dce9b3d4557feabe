// Stored sweeps and trials; see stored.hpp.
#include "analysis/stored.hpp"

#include "spec/device.hpp"

#include <gpusweep/stat_names.hpp>

#include <algorithm>
#include <unordered_map>

namespace gpusweep::host {

SweepSpec stored_spec(const db::SweepRecord& sweep) {
  SweepSpec spec = parse_sweep(sweep.spec_json, "sweep '" + sweep.name + "' in the database");
  return spec;
}

std::string machine_key(const db::EnvironmentInfo& e) {
  return e.hostname + "|" + e.cpu_model + "|" + e.gpus_json;
}

Machines machines_of(const std::vector<db::EnvironmentInfo>& environments) {
  Machines m;
  for (const auto& e : environments) m[e.id] = machine_key(e);
  return m;
}

std::optional<TargetTime> target_time(int64_t repeat, std::optional<double> time,
                                      std::optional<double> censored,
                                      std::optional<double> diverged) {
  if (!time) return std::nullopt;
  const bool never = diverged.value_or(0) > 0;
  return TargetTime{repeat, *time, censored.value_or(0) > 0 || never, never, ""};
}

std::optional<double> StoredTrial::peak_flops() const {
  // The config is read only where both devices were probed: compare asks
  // this of every trial, and most have no peak at all.
  const auto cuda = stats.matmul_peak_gflops_cuda;
  const bool cpu = cuda && stats.matmul_peak_gflops_cpu &&
                   device_setting(nlohmann::json::parse(row.plan.config_json)) == "cpu";
  const auto gflops = cuda && !cpu ? cuda : stats.matmul_peak_gflops_cpu;
  if (!gflops || *gflops <= 0) return std::nullopt;
  return *gflops * 1e9;
}

std::optional<double> StoredTrial::achieved_flops() const {
  if (!flops_per_step || *flops_per_step <= 0 || !row.summary || row.summary->samples_per_step <= 0)
    return std::nullopt;
  return *flops_per_step * row.summary->throughput_median / row.summary->samples_per_step;
}

std::optional<TargetTime> StoredTrial::target() const {
  std::optional<TargetTime> out = target_time(row.plan.repeat, stats.target_time_s,
                                              stats.target_censored, stats.target_diverged);
  if (!out && row.status == db::TrialStatus::timeout && last_eval_train_s &&
      *last_eval_train_s > 0) {
    // Killed by timeout_s after evaluating: it trained at least that long
    // without reaching the target (dropping such slow seeds biased the
    // median low).
    out = TargetTime{row.plan.repeat, *last_eval_train_s, true, false, ""};
  }
  if (out) out->machine = machine;
  return out;
}

namespace {

// The names stored_trials reads: the table's stats in its order (so that
// the i-th is HostStatValues::set_at(i)), then the SDKs' four.
const std::vector<std::string>& read_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& s : host_stats()) {
      if (!s.series) n.emplace_back(s.name);
    }
    n.emplace_back(stat::dp_allreduce_bytes_per_step);
    n.emplace_back(stat::intra_op_threads);
    n.emplace_back("compile_s");
    n.emplace_back(stat::flops_per_step);
    return n;
  }();
  return names;
}

void fill_stats(StoredTrial& t, const std::vector<std::optional<double>>& values) {
  const auto& names = read_names();
  const size_t host = names.size() - 4;
  for (size_t i = 0; i < host; ++i) {
    if (values[i]) t.stats.set_at(i, *values[i]);
  }
  t.dp_allreduce_bytes_per_step = values[host];
  t.intra_op_threads = values[host + 1];
  t.compile_s = values[host + 2];
  t.flops_per_step = values[host + 3];
}

}  // namespace

std::vector<StoredTrial> stored_trials(db::Store& store, int64_t sweep_id, db::TrialFields fields) {
  std::vector<db::TrialRecord> rows = store.trials(sweep_id, fields);
  const auto stats = store.last_stats(sweep_id, read_names());
  // The evaluations' clocks serve only a trial killed by timeout_s: a run
  // without one (most) does not read them.
  const bool timed_out = std::any_of(rows.begin(), rows.end(), [](const db::TrialRecord& t) {
    return t.status == db::TrialStatus::timeout;
  });
  const auto clocks =
      timed_out ? store.last_stats(sweep_id, {std::string(kCurvePrefix) + "train_s"}, "eval")
                : decltype(stats){};
  // Every environment of the database: a small table, cheaper whole than
  // a big run's found through its trials.
  const Machines machines = machines_of(store.environments(std::nullopt));
  std::vector<StoredTrial> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    StoredTrial& t = out[i];
    t.row = std::move(rows[i]);
    if (const auto it = stats.find(t.row.id); it != stats.end()) fill_stats(t, it->second);
    if (const auto it = clocks.find(t.row.id); it != clocks.end()) {
      t.last_eval_train_s = it->second[0];
    }
    if (t.row.environment_id) {
      if (const auto m = machines.find(*t.row.environment_id); m != machines.end()) {
        t.machine = m->second;
      }
    }
  }
  return out;
}

}  // namespace gpusweep::host
