// Reading a run for compare (compare.hpp): its trials' configs with their
// repeats pooled (gather_configs), the rounds a view reads, times to target
// from the stored statistics, and the machines the trials ran on.
#include "analysis/compare.hpp"

#include "analysis/race.hpp"
#include "model/stats.hpp"
#include "model/tune.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <unordered_map>

namespace gpusweep::host {

std::optional<TargetTime> target_time(int64_t repeat, std::optional<double> time,
                                      std::optional<double> censored,
                                      std::optional<double> diverged) {
  if (!time) return std::nullopt;
  const bool never = diverged.value_or(0) > 0;
  return TargetTime{repeat, *time, censored.value_or(0) > 0 || never, never, ""};
}

std::optional<TargetTime> stored_target_time(db::Store& store, const db::TrialRecord& t) {
  const auto time = store.last_stat(t.id, host_stat::target_time_s);
  if (!time) return std::nullopt;
  return target_time(t.plan.repeat, time, store.last_stat(t.id, host_stat::target_censored),
                     store.last_stat(t.id, host_stat::target_diverged));
}

std::optional<TargetTime> timed_out_target_time(db::Store& store, const db::TrialRecord& t) {
  const std::string clock = std::string(kCurvePrefix) + "train_s";
  std::optional<std::pair<int64_t, double>> last;  // (at_step, training seconds)
  for (const auto& m : store.metrics(t.id)) {
    if (m.kind == "eval" && m.name == clock && (!last || m.at_step >= last->first)) {
      last = std::make_pair(m.at_step, m.value);
    }
  }
  if (!last || !(last->second > 0)) return std::nullopt;
  return TargetTime{t.plan.repeat, last->second, true, false, ""};
}

std::string machine_key(const db::EnvironmentInfo& e) {
  return e.hostname + "|" + e.cpu_model + "|" + e.gpus_json;
}

Machines machines_of(const std::vector<db::EnvironmentInfo>& environments) {
  Machines m;
  for (const auto& e : environments) m[e.id] = machine_key(e);
  return m;
}

RunSamples run_of(const db::TrialRecord& t, const Machines& machines) {
  RunSamples run;
  run.repeat = t.plan.repeat;
  run.group = t.interleave_group;
  if (t.environment_id) {
    if (auto it = machines.find(*t.environment_id); it != machines.end()) run.machine = it->second;
  }
  return run;
}

Rounds rounds_for(const SweepSpec& spec, bool selection_data) {
  if (selection_data) return Rounds::all;
  return is_tune_run(spec) ? Rounds::confirmation : Rounds::all;
}

bool stops_when_precise(const SweepSpec& spec) {
  return spec.measure.precision > 0 || is_tune_run(spec);
}

bool in_rounds(const db::TrialRecord& t, Rounds rounds) {
  return rounds == Rounds::all || t.plan.repeat >= kConfirmRound;
}

namespace {

// The statistics gather_configs reads: each slot of last_stats' answer
// named where it is given its stat, so that no two lists must agree by
// position. dp_allreduce_bytes_per_step and intra_op_threads are torchkit's
// own stats (the SDK's names), not the host's.
enum GatherStat : size_t {
  overlap_fraction,
  target_time_s,
  target_censored,
  quality_se,
  dp_comm_share,
  target_diverged,
  dp_allreduce_bytes,
  intra_op_threads,
  kGatherStatCount
};
const std::vector<std::string>& gather_stats() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n(kGatherStatCount);
    n[overlap_fraction] = host_stat::overlap_fraction;
    n[target_time_s] = host_stat::target_time_s;
    n[target_censored] = host_stat::target_censored;
    n[quality_se] = host_stat::quality_se;
    n[dp_comm_share] = host_stat::dp_comm_share;
    n[target_diverged] = host_stat::target_diverged;
    n[dp_allreduce_bytes] = "dp_allreduce_bytes_per_step";
    n[intra_op_threads] = "intra_op_threads";
    return n;
  }();
  return names;
}
using Stats = std::unordered_map<int64_t, std::vector<std::optional<double>>>;
std::optional<double> stat_of(const Stats& stats, int64_t trial, GatherStat name) {
  const auto t = stats.find(trial);
  return t == stats.end() ? std::nullopt : t->second[name];
}

// Where a trial's run of block throughputs goes: its config and its place
// among the config's runs.
struct RunSlot {
  int64_t config_index = 0;
  size_t run = 0;
};

void set_values(RunSamples& run, db::BlockSeries& s) {
  run.values = std::move(s.throughput);
  run.cycles.swap(s.cycles);
  index_run(run);
  run.cycles.swap(s.cycles);  // the index has them; s keeps the buffer for the next trial
}

// Every block series of a run, indexed, by trial id: read on a connection
// of its own, on a thread of its own, while gather_configs reads the trials
// (the series and their logs are about half of its work). A series row never
// changes once its trial is stored, so this second snapshot cannot disagree
// with the first: a trial the first shows finished and this one missed is
// read from its blocks.
std::unordered_map<int64_t, RunSamples> read_series(const std::string& path, int64_t sweep_id) {
  db::Store reader(path, db::Connection::Mode::read_only);
  std::unordered_map<int64_t, RunSamples> out;
  reader.for_each_series(sweep_id, [&](int64_t id, db::BlockSeries& s) {
    RunSamples run;
    set_values(run, s);
    out.emplace(id, std::move(run));
  });
  return out;
}

// Every waiting run's block throughputs: from the series read ahead, or
// from its blocks, indexed.
void fill_runs(db::Store& store, std::unordered_map<int64_t, RunSamples> series,
               const std::unordered_map<int64_t, RunSlot>& waiting,
               std::map<int64_t, ConfigSamples>& by_index) {
  for (const auto& [id, slot] : waiting) {
    RunSamples& run = by_index[slot.config_index].runs[slot.run];
    if (auto it = series.find(id); it != series.end()) {
      run.values = std::move(it->second.values);
      run.index = std::move(it->second.index);
      continue;
    }
    db::BlockSeries s = db::series_of(store.blocks(id));  // blocks inserted by hand
    set_values(run, s);
  }
  // Then each config's values, in its runs' order; the runs keep their
  // index alone (the model reads nothing else): 10M blocks held once, not
  // twice.
  for (auto& [index, c] : by_index) {
    size_t n = 0;
    for (const auto& r : c.runs) n += r.values.size();
    c.throughput.reserve(n);
    for (auto& r : c.runs) {
      c.throughput.insert(c.throughput.end(), r.values.begin(), r.values.end());
      std::vector<double>().swap(r.values);
    }
  }
}

}  // namespace

std::vector<ConfigSamples> gather_configs(db::Store& store, int64_t sweep_id, bool with_blocks,
                                          Rounds rounds, std::vector<db::TrialRecord>* read) {
  std::map<int64_t, ConfigSamples> by_index;
  // Every environment's machine: those of the run's trials among them.
  const Machines machines =
      with_blocks ? machines_of(store.environments(std::nullopt)) : Machines{};
  // The whole run in four reads: series ahead, on a connection and a thread
  // of its own, while this one reads the statistics, trials and
  // environments.
  std::future<std::unordered_map<int64_t, RunSamples>> series;
  if (with_blocks) series = std::async(std::launch::async, read_series, store.path(), sweep_id);
  const Stats stats = store.last_stats(sweep_id, gather_stats());
  std::vector<db::TrialRecord> trials = store.trials(sweep_id, db::TrialFields::brief);
  std::unordered_map<int64_t, RunSlot> waiting;  // trial id: its run, values to come
  for (const auto& t : trials) {
    if (!in_rounds(t, rounds)) continue;
    ConfigSamples& c = by_index[t.plan.config_index];
    c.config_index = t.plan.config_index;
    if (c.config.is_null()) c.config = Json::parse(t.plan.config_json);
    ++c.trials;
    if (t.status != db::TrialStatus::ok || !t.summary) {
      // A time-to-target trial killed by timeout_s after an evaluation trained
      // at least its last evaluation's clock without reaching the target:
      // censored there, not dropped (dropping the slow seeds biased the
      // median low).
      if (t.status == db::TrialStatus::timeout) {
        if (auto time = timed_out_target_time(store, t)) {
          time->machine = run_of(t, machines).machine;
          c.target_times.push_back(*time);
        }
      }
      if (c.problem.empty() && t.status != db::TrialStatus::pending) {
        c.problem = db::status_name(t.status) + (t.error ? ": " + *t.error : std::string());
      }
      continue;
    }
    ++c.ok;
    c.unit = t.summary->unit;
    if (with_blocks) {
      waiting[t.id] = {t.plan.config_index, c.runs.size()};
      c.runs.push_back(run_of(t, machines));
      c.overlap_fraction =
          std::max(c.overlap_fraction, stat_of(stats, t.id, overlap_fraction).value_or(0));
    }
    if (auto time = target_time(t.plan.repeat, stat_of(stats, t.id, target_time_s),
                                stat_of(stats, t.id, target_censored),
                                stat_of(stats, t.id, target_diverged))) {
      time->machine = run_of(t, machines).machine;
      c.target_times.push_back(*time);
    }
    if (const auto share = stat_of(stats, t.id, dp_comm_share)) c.comm_share.push_back(*share);
    if (const auto bytes = stat_of(stats, t.id, dp_allreduce_bytes)) {
      c.allreduce_bytes_per_step = bytes;
    }
    if (const auto threads = stat_of(stats, t.id, intra_op_threads)) c.threads = threads;
    if (t.summary->quality) {
      c.quality.push_back(
          {*t.summary->quality, stat_of(stats, t.id, quality_se).value_or(NAN), t.plan.repeat});
    }
    if (t.summary->peak_memory_bytes) {
      c.peak_memory_bytes =
          std::max(c.peak_memory_bytes.value_or(0), *t.summary->peak_memory_bytes);
    }
    if (t.summary->quality_higher_is_better)
      c.higher_is_better = t.summary->quality_higher_is_better;
  }
  if (with_blocks) fill_runs(store, series.get(), waiting, by_index);
  if (read != nullptr) *read = std::move(trials);
  std::vector<ConfigSamples> out;
  for (auto& [idx, c] : by_index) out.push_back(std::move(c));
  return out;
}

}  // namespace gpusweep::host
