// A tune run's trials for its race; see tune_trials.hpp.
#include "analysis/tune_trials.hpp"

#include "analysis/compare.hpp"
#include "analysis/metric_values.hpp"
#include "spec/metrics.hpp"
#include "spec/stats.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace gpusweep::host {

void read_objective(db::Store& store, Objective objective, const db::TrialRecord& t, RaceTrial& r) {
  if (objective == Objective::peak_memory) {
    if (t.summary && t.summary->peak_memory_bytes && *t.summary->peak_memory_bytes > 0) {
      r.values.push_back(1 / *t.summary->peak_memory_bytes);
    }
  } else if (objective == Objective::step_time) {
    for (const auto& b : store.blocks(t.id)) {
      const auto step_time = db::block_step_time(b);
      if (!step_time) continue;
      r.values.push_back(1 / *step_time);
      r.cycles.push_back(b.cycle);
    }
  } else {
    db::BlockSeries s = store.series(t.id);
    r.values = std::move(s.throughput);
    r.cycles = std::move(s.cycles);
  }
}

RaceOptions race_options(const SweepSpec& spec, const TuneSpace& space, const TuneSpec& tune) {
  RaceOptions o;
  o.alpha = tune.alpha;
  o.max_live = tune.max_live;
  o.confirm_repeats = tune.confirm_repeats;
  o.seed = tune.seed;
  o.baseline = 0;
  if (tune.to_target()) {
    o.time_to_target = true;
    o.confirm_repeats = std::max(o.confirm_repeats, kTimeConfirmRounds);
  }
  for (const auto& c : tune.constraints) o.constraints.push_back(parse_constraint(c));
  if (!spec.baseline.empty()) {
    Json config = space.config(0);
    for (const auto& [key, value] : spec.baseline.items()) config[key] = value;
    const auto index = space.index_of(config);
    if (!index || !matches(space.config(*index), spec.baseline)) {
      throw UsageError(spec.source + ": baseline " + spec.baseline.dump() +
                       " is not a config of the space; use values from the grid");
    }
    o.baseline = *index;
  }
  return o;
}

TrialCosts trial_costs(const std::vector<StoredTrial>& trials) {
  // A trial that took turns with others (interleaved) waited through their
  // turns: only its own turns (stat turn_s) are its share of the wall time.
  std::vector<std::pair<uint64_t, double>> costs;
  for (const auto& st : trials) {
    const db::TrialRecord& t = st.row;
    if (!t.wall_s) continue;
    costs.push_back({static_cast<uint64_t>(t.plan.config_index),
                     t.interleave_group ? st.stats.turn_s.value_or(*t.wall_s) : *t.wall_s});
  }
  return TrialCosts(costs);
}

namespace {

// A run's trials' times to target, read once, and the longest time of any
// trial of each round or an earlier one. A trial whose metric diverged
// (went NaN) will never reach the target, so any time is a true lower bound
// on its own: race_trials censors it at that longest time, so that it
// counts as slower than every time known then (and a replay of the rounds
// up to r sees what was seen at r).
struct TrialTimes {
  std::vector<std::optional<TargetTime>> of;  // parallel to the trials
  std::vector<bool> diverged;                 // parallel to the trials
  std::map<int64_t, double> longest;          // round -> the longest time up to it
};

// From the stored trials, read once: a race looks every round, and serve
// every second.
TrialTimes trial_times(const std::vector<StoredTrial>& trials) {
  TrialTimes out;
  out.of.resize(trials.size());
  out.diverged.resize(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    const HostStatValues& s = trials[i].stats;
    const int64_t round = trials[i].row.plan.repeat;
    out.of[i] = target_time(round, s.target_time_s, s.target_censored);
    out.diverged[i] = s.target_diverged.value_or(0) > 0;
    double& most = out.longest[round];
    if (out.of[i]) most = std::max(most, out.of[i]->time_s);
  }
  double so_far = 0;
  for (auto& [round, time] : out.longest) time = so_far = std::max(so_far, time);
  return out;
}

// A target trial killed by timeout_s after evaluating is evidence, as a
// capped trial is: r becomes ok, censored at its last evaluation's training
// clock, not retried nor written off outside the race's alpha (as compare
// reads it). Left transient when it never evaluated.
void censor_timeout(const StoredTrial& t, RaceTrial& r) {
  const auto time = t.target();
  if (!time || !(time->time_s > 0)) return;
  const RunSamples run = run_of(t);
  r.outcome = RaceTrial::Outcome::ok;
  r.reason.clear();
  r.group = run.group;
  r.machine = run.machine;
  r.values = {1 / time->time_s};
  r.censored = true;
}

}  // namespace

std::vector<RaceTrial> race_trials(db::Store& store, int64_t sweep_id, const TuneSpec& tune) {
  return race_trials(store, stored_trials(store, sweep_id, db::TrialFields::all), tune);
}

std::vector<RaceTrial> race_trials(db::Store& store, const std::vector<StoredTrial>& trials,
                                   const TuneSpec& tune) {
  const bool to_target = tune.to_target();
  const TrialTimes times = to_target ? trial_times(trials) : TrialTimes{};
  std::vector<RaceTrial> out;
  for (size_t i = 0; i < trials.size(); ++i) {
    const db::TrialRecord& t = trials[i].row;
    RaceTrial r;
    r.config = static_cast<uint64_t>(t.plan.config_index);
    r.round = t.plan.repeat;
    using O = RaceTrial::Outcome;
    switch (t.status) {
      case db::TrialStatus::pending:
      case db::TrialStatus::interrupted:
        r.outcome = O::pending;
        break;
      case db::TrialStatus::oom:
        r.outcome = O::oom;
        r.reason = t.error.value_or("");
        break;
      case db::TrialStatus::ok:
        r.outcome = O::ok;
        break;
      case db::TrialStatus::timeout:
      case db::TrialStatus::crashed:
        r.outcome = O::transient;
        r.reason = db::status_name(t.status) + (t.error ? ": " + *t.error : std::string());
        if (to_target && t.status == db::TrialStatus::timeout) censor_timeout(trials[i], r);
        break;
      default:
        r.outcome = O::failed;
        r.reason = db::status_name(t.status) + (t.error ? ": " + *t.error : std::string());
    }
    if (r.outcome == O::ok && t.status == db::TrialStatus::ok) {
      const RunSamples run = run_of(trials[i]);
      r.group = run.group;
      r.machine = run.machine;
      if (to_target) {
        // One value a trial: 1 / its time to target, a bound when censored.
        // A target met before any training (the first evaluation, at time
        // 0) is the fastest there is, not a failure: its time is taken as a
        // nanosecond, so that 1/time stays finite.
        constexpr double kInstant = 1e-9;
        if (const auto& time = times.of[i]; time && time->time_s >= 0) {
          const bool diverged = times.diverged[i];
          r.values = {1 / std::max(kInstant, diverged
                                                 ? std::max(times.longest.at(r.round), time->time_s)
                                                 : time->time_s)};
          r.censored = time->censored || diverged;
        }
      } else {
        read_objective(store, tune.objective, t, r);
      }
      if (r.values.empty()) {
        r.outcome = O::failed;
        r.reason = std::string("reports no ") + objective_name(tune.objective);
      }
    }
    if (r.outcome == O::ok && t.summary) {
      for (const auto& name : summary_metric_names()) {
        if (auto v = summary_metric(*t.summary, name)) r.metrics[name] = *v;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace gpusweep::host
