// Comparing configs against a baseline; see compare.hpp.
#include "analysis/compare.hpp"

#include "analysis/precision.hpp"
#include "analysis/race.hpp"
#include "model/tune.hpp"
#include "support/error.hpp"
#include "support/stats.hpp"

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
  const auto time = store.last_stat(t.id, "target_time_s");
  if (!time) return std::nullopt;
  return target_time(t.plan.repeat, time, store.last_stat(t.id, "target_censored"),
                     store.last_stat(t.id, "target_diverged"));
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

// The statistics gather_configs reads, in last_stats' order.
const std::vector<std::string> kGatherStats = {"overlap_fraction",
                                               "target_time_s",
                                               "target_censored",
                                               "quality_se",
                                               "dp_comm_share",
                                               "target_diverged",
                                               "dp_allreduce_bytes_per_step",
                                               "intra_op_threads"};
enum GatherStat : size_t {
  overlap_fraction,
  target_time_s,
  target_censored,
  quality_se,
  dp_comm_share,
  target_diverged,
  dp_allreduce_bytes,
  intra_op_threads
};
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
  const Stats stats = store.last_stats(sweep_id, kGatherStats);
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
      // median low: the 2026-11-26 audit's M2).
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

namespace {

// The config options.baseline picks; throws UsageError when it picks none or
// several.
const ConfigSamples* find_baseline(const std::vector<ConfigSamples>& configs,
                                   const CompareOptions& options) {
  const ConfigSamples* base = nullptr;
  int matches_found = 0;
  for (const auto& c : configs) {
    const bool is_base = is_baseline(options.baseline, c.config_index, c.config);
    if (is_base) {
      ++matches_found;
      if (base == nullptr) base = &c;
    }
  }
  if (matches_found == 0) {
    throw UsageError("baseline " + options.baseline.dump() +
                     " matches none of the sweep's configs; use settings that appear in it");
  }
  if (matches_found > 1) {
    throw UsageError("baseline " + options.baseline.dump() + " matches " +
                     std::to_string(matches_found) +
                     " configs; add settings to --baseline to pick one");
  }
  return base;
}

}  // namespace

std::vector<ComparisonRow> compare_configs(const std::vector<ConfigSamples>& configs,
                                           const CompareOptions& options) {
  const ConfigSamples* base = find_baseline(configs, options);
  std::vector<ComparisonRow> rows;
  for (const auto& c : configs) {
    ComparisonRow r;
    r.config = &c;
    r.baseline = &c == base;
    if (!r.baseline) {
      const double level = options.sequential ? sequential_level(options.alpha) : 1 - options.alpha;
      r.ratio = estimate_ratio(base->runs, c.runs, level);
      if (r.ratio && r.ratio->across_machines && !options.across_machines) {
        r.withheld =
            "not compared: its trials and the baseline's ran on different machines "
            "(--across-machines to compare them anyway)";
      } else if (r.ratio) {
        r.verdict = verdict(*r.ratio, options.min_effect);
      }
    }
    // On a target run each trial stops at the target or at its budget (or
    // its cap): a slow config's quality is read lower, where it stopped, not
    // worse (the ttq audit's L5). Its quality is not compared there.
    const bool to_target = !base->target_times.empty() || !c.target_times.empty();
    if (!r.baseline && !to_target) {
      r.quality = compare_quality(base->quality, c.quality, c.higher_is_better.value_or(true),
                                  options.max_quality_loss, options.alpha);
    }
    rows.push_back(r);
  }
  return rows;
}

std::optional<size_t> first_to_target(const std::vector<TargetRow>& rows) {
  std::optional<size_t> first;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].times.median) continue;
    if (!first || *rows[i].times.median < *rows[*first].times.median) first = i;
  }
  return first;
}

namespace {

// Whether a seed's trials of the two configs ran on different machines
// (both known).
bool seeds_across_machines(const std::vector<TargetTime>& base,
                           const std::vector<TargetTime>& config) {
  for (const auto& a : base) {
    for (const auto& b : config) {
      if (a.repeat == b.repeat && !a.machine.empty() && !b.machine.empty() &&
          a.machine != b.machine) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<TargetRow> compare_targets(const std::vector<ComparisonRow>& rows,
                                       const CompareOptions& options) {
  const ConfigSamples* base = nullptr;
  for (const auto& r : rows) {
    if (r.baseline) base = r.config;
  }
  std::vector<TargetRow> out;
  for (const auto& r : rows) {
    TargetRow t;
    t.config = r.config;
    t.baseline = r.baseline;
    t.times = summarise_times(r.config->target_times, 1 - options.alpha);
    if (r.baseline) {
      t.verdict = "baseline";
    } else if (base != nullptr) {
      t.ratio = paired_time_ratio(base->target_times, r.config->target_times, 1 - options.alpha);
    }
    if (t.ratio && !options.across_machines && base != nullptr &&
        seeds_across_machines(base->target_times, r.config->target_times)) {
      // As the throughput table withholds it (the ttq audit's L4): a seed's
      // two trials on different hosts or GPUs differ by the machine too.
      t.verdict =
          "not compared: a seed's trials ran on different machines (--across-machines to "
          "compare them anyway)";
    } else if (t.ratio && t.ratio->interval) {
      // The throughput verdicts' rule (verdict()): a change the interval
      // shows but within min_effect is negligible. Batch sizes that learn in
      // the same steps differ to the target by a few hundredths of a percent
      // (the larger batch's slightly longer step), consistently enough over
      // six seeds for the sign test's [min, max] to exclude 1. A time ratio
      // above 1 is a longer time: "faster" of a ratio is slower to target.
      const Verdict v = verdict(*t.ratio, options.min_effect);
      const bool faster = v == Verdict::slower, slower = v == Verdict::faster;
      t.verdict = faster                     ? "faster to target"
                  : slower                   ? "slower to target"
                  : v == Verdict::negligible ? "negligible difference"
                                             : "no significant difference";
      const bool more_per_second = r.verdict && *r.verdict == Verdict::faster;
      const bool fewer_per_second = r.verdict && *r.verdict == Verdict::slower;
      t.inversion = (more_per_second && slower) || (fewer_per_second && faster);
    } else if (!r.baseline) {
      t.verdict = "no interval";
    }
    out.push_back(t);
  }
  return out;
}

namespace {

// Two configs that differ in one knob alone, as compare pairs them.
struct KnobPair {
  RatioEstimate estimate;                // the pair's own ratio (estimate_ratio)
  std::map<int64_t, double> repeat_log;  // its per-repeat log ratios, by repeat
  // Each side's per-repeat log ratios to the baseline (empty without one),
  // kept once per config by ablation.
  const std::map<int64_t, double>* from_base = nullptr;
  const std::map<int64_t, double>* to_base = nullptr;
};

// The knob's effect through the baseline, for pairs whose configs ran
// different repeats (a precision run goes on with the configs not yet
// precise, so a pair of them shares only the first rounds): each config's
// log ratio to the baseline is the mean over every repeat it ran with it (as
// compare's own ratio), and the effect is the mean over the pairs of to minus
// from. Its variance sums, over the repeats, the square of each repeat's
// contribution to the effect (a sandwich variance with repeats as clusters,
// so whatever the configs of one repeat share, the baseline's own noise
// among it, counts with its sign), each config's deviations scaled by
// sqrt(n / (n - 1)) so that a single config gives its own t interval exactly.
// Degrees of freedom: every side shares the baseline's noise in the repeats
// it ran with it, so the variance gathers in the early repeats most sides
// share; Welch-Satterthwaite over the sides' own variances cannot see that,
// and its df came out too large (the 2026-11-26 audit's M1: 95% intervals
// missing up to 10.5% in precision runs and after one failed trial). From
// kSandwichDfRepeats repeats on, the sandwich's own Satterthwaite df; below,
// the fewest repeats - 1. False when a config has fewer than two repeats
// with the baseline.
constexpr double kSandwichDfRepeats = 5;

bool through_baseline(const std::vector<KnobPair>& pairs, double level, AblationRow* row) {
  struct Side {
    const std::map<int64_t, double>* logs;
    double weight;
  };
  std::vector<Side> sides;
  const double g = static_cast<double>(pairs.size());
  for (const auto& p : pairs) {
    sides.push_back({p.from_base, -1 / g});
    sides.push_back({p.to_base, 1 / g});
  }
  std::map<int64_t, double> contribution;  // repeat -> its share of the effect's error
  double effect = 0, min_df = INFINITY;
  for (const auto& side : sides) {
    const double n = static_cast<double>(side.logs->size());
    if (n < 2) return false;
    double mean = 0;
    for (const auto& [r, l] : *side.logs) mean += l / n;
    effect += side.weight * mean;
    const double scale = side.weight / n * std::sqrt(n / (n - 1));
    for (const auto& [r, l] : *side.logs) contribution[r] += scale * (l - mean);
    min_df = std::min(min_df, n - 1);
  }
  double var = 0, fourth = 0;
  for (const auto& [r, c] : contribution) {
    var += c * c;
    fourth += c * c * c * c;
  }
  // From 5 repeats on, the sandwich's own Satterthwaite df (each repeat a
  // cluster: (sum c^2)^2 / sum c^4), which sees where the variance gathers;
  // with fewer it runs too large, and the fewest repeats - 1 holds.
  const double clusters = static_cast<double>(contribution.size());
  const double df = clusters >= kSandwichDfRepeats && fourth > 0
                        ? std::clamp(var * var / fourth, 1.0, clusters - 1)
                        : min_df;
  const double half = var > 0 ? t_quantile(0.5 + level / 2, df) * std::sqrt(var) : 0;
  row->ratio = std::exp(effect);
  row->low = std::exp(effect - half);
  row->high = std::exp(effect + half);
  row->df = df;
  row->note =
      "repeats not shared by every pair: each config's ratio to the baseline over all "
      "its repeats, the pairs' differences averaged";
  return true;
}

// The knob's effect as t over the repeats every pair ran: each repeat's
// effect is the mean of the pairs' log ratios in that repeat. False when
// fewer than two repeats are shared by all pairs, or when some pair ran
// repeats the others did not (a failed trial, or a precision run's rounds
// for the configs not yet precise): leaving those out would throw away the
// data that made those pairs precise, so their own estimates are combined.
bool over_shared_repeats(const std::vector<KnobPair>& pairs, double level, AblationRow* row) {
  std::map<int64_t, double> effect;  // repeat -> sum of the pairs' log ratios
  std::map<int64_t, size_t> seen;
  for (const auto& p : pairs) {
    for (const auto& [r, l] : p.repeat_log) {
      effect[r] += l;
      ++seen[r];
    }
  }
  std::vector<double> shared;
  size_t dropped = 0;
  for (const auto& [r, sum] : effect) {
    if (seen[r] == pairs.size()) {
      shared.push_back(sum / static_cast<double>(pairs.size()));
    } else {
      ++dropped;
    }
  }
  if (shared.size() < 2 || dropped > 0) return false;
  const double n = static_cast<double>(shared.size());
  double mean = 0, ss = 0;
  for (double l : shared) mean += l / n;
  for (double l : shared) ss += (l - mean) * (l - mean);
  const double half = t_quantile(0.5 + level / 2, n - 1) * std::sqrt(ss / (n - 1) / n);
  row->ratio = std::exp(mean);
  row->low = std::exp(mean - half);
  row->high = std::exp(mean + half);
  row->repeats = static_cast<int>(shared.size());
  row->df = n - 1;
  return true;
}

// Repeats that do not pair across the pairs (or one repeat each): the pairs'
// own estimates combined, the mean of their log ratios with the variance of
// a mean of independent estimates and Welch-Satterthwaite degrees of freedom.
void combine_pairs(const std::vector<KnobPair>& pairs, double level, AblationRow* row) {
  const double g = static_cast<double>(pairs.size());
  double mean = 0, var = 0, min_df = INFINITY;
  std::vector<std::pair<double, double>> parts;
  for (const auto& p : pairs) {
    const double v = p.estimate.log_se * p.estimate.log_se / (g * g);
    mean += std::log(p.estimate.ratio) / g;
    var += v;
    parts.push_back({v, p.estimate.df});
    min_df = std::min(min_df, p.estimate.df);
  }
  row->ratio = std::exp(mean);
  const double df = welch_df(parts);
  row->df = std::isfinite(df) ? df : min_df;
  const double half =
      var > 0 && row->df > 0 ? t_quantile(0.5 + level / 2, row->df) * std::sqrt(var) : 0;
  row->low = std::exp(mean - half);
  row->high = std::exp(mean + half);
  if (pairs.size() > 1) {
    row->note = "repeats not shared by every pair: the pairs' own intervals combined";
  }
  std::vector<std::string> notes;
  for (const auto& p : pairs) {
    std::string n = design_note(p.estimate);
    if (p.estimate.design == RatioDesign::repeats || n.empty()) continue;
    if (std::find(notes.begin(), notes.end(), n) != notes.end()) continue;
    notes.push_back(n);
    row->note += (row->note.empty() ? "" : "; ") + n;
  }
}

// One knob's row from its pairs (each `from` against `to` at one combination
// of the other knobs).
AblationRow knob_row(AblationRow row, const std::vector<KnobPair>& pairs, double level) {
  row.pairs = static_cast<int>(pairs.size());
  if (pairs.empty()) return row;
  row.pair_min = INFINITY;
  row.pair_max = -INFINITY;
  bool across = false;
  for (const auto& p : pairs) {
    row.pair_min = std::min(row.pair_min, p.estimate.ratio);
    row.pair_max = std::max(row.pair_max, p.estimate.ratio);
    across = across || p.estimate.across_machines;
  }
  if (!over_shared_repeats(pairs, level, &row) && !through_baseline(pairs, level, &row)) {
    combine_pairs(pairs, level, &row);
  }
  const std::string machines = "some pairs compared across machines";
  if (across && row.note.find("across machines") == std::string::npos) {
    row.note += (row.note.empty() ? "" : "; ") + machines;
  }
  return row;
}

}  // namespace

std::vector<AblationRow> ablation(const std::vector<ConfigSamples>& configs, const Json& grid,
                                  const CompareOptions& options) {
  const double level = options.sequential ? sequential_level(options.alpha) : 1 - options.alpha;
  const ConfigSamples* base = find_baseline(configs, options);
  // Each config's per-repeat log ratios to the baseline, computed once: a
  // config is in a pair for every value of every knob.
  std::unordered_map<const ConfigSamples*, std::map<int64_t, double>> to_base;
  const auto base_logs = [&](const ConfigSamples* c) -> const std::map<int64_t, double>& {
    auto it = to_base.find(c);
    if (it == to_base.end()) it = to_base.emplace(c, repeat_log_ratios(base->runs, c->runs)).first;
    return it->second;
  };
  std::vector<AblationRow> rows;
  for (const auto& [knob, values] : grid.items()) {
    if (!values.is_array() || values.size() < 2) continue;
    // Configs grouped by every setting but this knob, then by its value: each
    // group holds the configs that differ in this knob alone.
    // Values are matched as JSON values, so that a grid's 20 finds a real
    // parameter's 20.0.
    std::map<std::string, std::vector<std::pair<Json, const ConfigSamples*>>> groups;
    for (const auto& c : configs) {
      if (c.runs.empty() || !c.config.contains(knob)) continue;
      std::string rest;  // every other setting, as the group's key
      for (const auto& [k, v] : c.config.items()) {
        if (k != knob) rest += Json(k).dump() + ':' + v.dump() + ',';
      }
      groups[rest].emplace_back(c.config.at(knob), &c);
    }
    for (size_t vi = 1; vi < values.size(); ++vi) {
      std::vector<KnobPair> pairs;
      for (const auto& [rest, by_value] : groups) {
        auto at = [&by_value = by_value](const Json& v) -> const ConfigSamples* {
          for (const auto& [value, c] : by_value) {
            if (value == v) return c;
          }
          return nullptr;
        };
        const ConfigSamples* a = at(values[0]);
        const ConfigSamples* b = at(values[vi]);
        if (a == nullptr || b == nullptr) continue;
        const auto& x = a->runs;
        const auto& y = b->runs;
        // Each pair as compare estimates it (paired by repeat and cycle).
        std::map<int64_t, double> repeat_log;
        if (auto e = estimate_ratio(x, y, level, &repeat_log)) {
          pairs.push_back({*e, std::move(repeat_log), &base_logs(a), &base_logs(b)});
        }
      }
      AblationRow row;
      row.knob = knob;
      row.from = values[0];
      row.to = values[vi];
      rows.push_back(knob_row(row, pairs, level));
    }
  }
  return rows;
}

}  // namespace gpusweep::host
