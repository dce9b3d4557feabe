// Reading a run for compare (compare.hpp): its trials' configs with their
// repeats pooled (gather_configs) from the run's stored trials, and the
// rounds a view reads.
#include "analysis/compare.hpp"

#include "analysis/race.hpp"
#include "spec/stats.hpp"
#include "spec/tune.hpp"

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <unordered_map>

namespace gpusweep::host {

RunSamples run_of(const StoredTrial& t) {
  RunSamples run;
  run.repeat = t.row.plan.repeat;
  run.group = t.row.interleave_group;
  run.machine = t.machine;
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

// What an ok trial adds to its config, blocks aside.
void add_ok_trial(const StoredTrial& st, bool with_blocks, ConfigSamples& c) {
  const db::TrialRecord& t = st.row;
  ++c.ok;
  c.unit = t.summary->unit;
  if (with_blocks) {
    c.overlap_fraction = std::max(c.overlap_fraction, st.stats.overlap_fraction.value_or(0));
  }
  if (auto time = st.target()) c.target_times.push_back(*time);
  if (const auto share = st.stats.dp_comm_share) c.comm_share.push_back(*share);
  if (const auto bytes = st.dp_allreduce_bytes_per_step) c.allreduce_bytes_per_step = bytes;
  if (const auto threads = st.intra_op_threads) c.threads = threads;
  const db::Summary& sum = *t.summary;
  if (!sum.secondary_unit.empty() && sum.secondary_throughput_median &&
      *sum.secondary_throughput_median > 0 && sum.throughput_median > 0) {
    c.secondary_unit = sum.secondary_unit;
    c.secondary_per_sample.push_back(*sum.secondary_throughput_median / sum.throughput_median);
  }
  if (sum.samples_per_step > 0) c.samples_per_step = sum.samples_per_step;
  if (st.compile_s && *st.compile_s > 0) c.compile_s.push_back(*st.compile_s);
  if (st.flops_per_step && *st.flops_per_step > 0) c.flops_per_step.push_back(*st.flops_per_step);
  if (const auto peak = st.peak_flops()) c.peak_flops = std::max(c.peak_flops.value_or(0), *peak);
  if (t.summary->quality) {
    c.quality.push_back({*t.summary->quality, st.stats.quality_se.value_or(NAN), t.plan.repeat});
  }
  if (t.summary->peak_memory_bytes) {
    c.peak_memory_bytes = std::max(c.peak_memory_bytes.value_or(0), *t.summary->peak_memory_bytes);
  }
  if (t.summary->quality_higher_is_better) c.higher_is_better = t.summary->quality_higher_is_better;
}

}  // namespace

namespace {

// The configs of `trials` in `rounds`; their block series, when wanted, come
// from `series` (read ahead) or, for a trial it lacks, from its blocks.
std::vector<ConfigSamples> configs_of(db::Store& store, const std::vector<StoredTrial>& trials,
                                      bool with_blocks, Rounds rounds,
                                      std::future<std::unordered_map<int64_t, RunSamples>> series) {
  std::map<int64_t, ConfigSamples> by_index;
  std::unordered_map<int64_t, RunSlot> waiting;  // trial id: its run, values to come
  for (const auto& st : trials) {
    const db::TrialRecord& t = st.row;
    if (!in_rounds(t, rounds)) continue;
    ConfigSamples& c = by_index[t.plan.config_index];
    c.config_index = t.plan.config_index;
    if (c.config.is_null()) c.config = Json::parse(t.plan.config_json);
    ++c.trials;
    if (t.status != db::TrialStatus::ok || !t.summary) {
      // A time-to-target trial killed by timeout_s after an evaluation is
      // censored there, not dropped (StoredTrial::target).
      if (t.status == db::TrialStatus::timeout) {
        if (auto time = st.target()) c.target_times.push_back(*time);
      }
      if (c.problem.empty() && t.status != db::TrialStatus::pending) {
        c.problem = db::status_name(t.status) + (t.error ? ": " + *t.error : std::string());
      }
      continue;
    }
    add_ok_trial(st, with_blocks, c);
    if (with_blocks) {
      waiting[t.id] = {t.plan.config_index, c.runs.size()};
      c.runs.push_back(run_of(st));
    }
  }
  if (with_blocks) fill_runs(store, series.get(), waiting, by_index);
  std::vector<ConfigSamples> out;
  for (auto& [idx, c] : by_index) out.push_back(std::move(c));
  return out;
}

std::future<std::unordered_map<int64_t, RunSamples>> series_ahead(db::Store& store,
                                                                  int64_t sweep_id,
                                                                  bool with_blocks) {
  if (!with_blocks) return {};
  return std::async(std::launch::async, read_series, store.path(), sweep_id);
}

}  // namespace

std::vector<ConfigSamples> gather_configs(db::Store& store, int64_t sweep_id, bool with_blocks,
                                          Rounds rounds, std::vector<StoredTrial>* read) {
  // The whole run in five reads: series ahead, on a connection and a thread
  // of its own, while this one reads the trials.
  auto series = series_ahead(store, sweep_id, with_blocks);
  std::vector<StoredTrial> trials = stored_trials(store, sweep_id);
  auto out = configs_of(store, trials, with_blocks, rounds, std::move(series));
  if (read != nullptr) *read = std::move(trials);
  return out;
}

std::vector<ConfigSamples> gather_configs(db::Store& store, int64_t sweep_id,
                                          const std::vector<StoredTrial>& trials, bool with_blocks,
                                          Rounds rounds) {
  return configs_of(store, trials, with_blocks, rounds, series_ahead(store, sweep_id, with_blocks));
}

}  // namespace gpusweep::host
