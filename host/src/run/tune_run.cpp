// Tune runs; see tune_run.hpp.
#include "run/tune_run.hpp"

#include "analysis/tune_trials.hpp"
#include "spec/device.hpp"
#include "spec/hashing.hpp"
#include "support/error.hpp"
#include "support/nvml.hpp"

#include <algorithm>

namespace gpusweep::host {

TuneRun::TuneRun(const SweepSpec& spec, const PluginInfo& info, RunRequest request, TuneSpec tune)
    : spec_(spec), info_(info), tune_(std::move(tune)), space_(spec, info.manifest) {
  if (spec.grid.empty()) {
    throw UsageError(spec.source +
                     ": grid: a tune needs knobs to search; list values or ranges "
                     "in \"grid\"");
  }
  if (tune_.to_target() && !spec.measure.target) {
    throw UsageError(spec.source +
                     ": tune.objective time_to_target: the sweep has no measure.target to race "
                     "to; add one, e.g. \"measure\": {\"target\": {\"value\": 0.235, "
                     "\"max_s\": 15}} (`gpusweep plugins " +
                     info.manifest.name + "` lists the metrics it may name)");
  }
  if (!tune_.to_target() && spec.measure.target) {
    throw UsageError(spec.source +
                     ": measure.target: a tune with a target races on time to "
                     "target, not on " +
                     objective_name(tune_.objective) +
                     ": use --objective time_to_target (the default when the sweep has a "
                     "target), or drop measure.target to race on " +
                     objective_name(tune_.objective));
  }
  options_ = race_options(spec, space_, tune_);
  refuse_gpu_interleave();
  // The first round, for a new run: the baseline and one knob changed at a time.
  const RaceStatus first = race(space_, {}, options_);
  std::vector<PlannedTrial> plan;
  for (uint64_t c : round_order(first.next, spec.measure.order_seed, first.next_round)) {
    PlannedTrial t;
    t.ordinal = static_cast<int64_t>(plan.size());
    t.config_index = static_cast<int64_t>(c);
    t.repeat = first.next_round;
    t.config = space_.config(c);
    t.config_hash = config_hash(info.manifest.name, info.manifest.version, t.config);
    plan.push_back(std::move(t));
  }
  request.initial_plan = std::move(plan);
  run_ = std::make_unique<SweepRun>(spec_, info_, request);
}

void TuneRun::refuse_gpu_interleave() const {
  if (spec_.measure.interleave <= 1) return;
  const Nvml* nvml = Nvml::shared();
  const unsigned gpus = nvml != nullptr ? nvml->device_count() : nvidia_device_nodes();
  // The devices the space's configs name: the base's, or each of the knob's.
  std::vector<std::string> devices = {device_setting(space_.config(0))};
  for (size_t k = 0; k < space_.knobs(); ++k) {
    if (space_.name(k) != "device") continue;
    for (const Json& v : space_.levels(k)) {
      if (v.is_string()) devices.push_back(v.get<std::string>());
    }
  }
  for (const auto& d : devices) {
    if (on_gpu(d, gpus)) {
      throw UsageError(spec_.source + ": measure.interleave " +
                       std::to_string(spec_.measure.interleave) +
                       ": tune does not interleave GPU trials (device " + d +
                       "): a waiting trial keeps its device memory, so one config's "
                       "out-of-memory could be its neighbour's doing, and the race would rule "
                       "out the larger batches on it. Set measure.interleave to 1 (or leave it "
                       "out): tune's rounds run GPU trials one after another, each round in its "
                       "own shuffled order");
    }
  }
}

void TuneRun::note_leader(const RaceStatus& st) {
  if (options_.time_to_target && st.phase == RacePhase::racing && st.leader) {
    run_->set_round_leader(st.next_round, static_cast<int64_t>(*st.leader));
  }
}

RaceStatus TuneRun::status() {
  // A finished run's confirmation ended, by its interval or by the budget.
  return race(space_, race_trials(run_->store(), run_->record().id, tune_), options_,
              run_->record().status == db::SweepStatus::finished);
}

// The loop of rounds reads top to bottom: run what is
// pending, look, decide whether the budget allows another round, plan it.
bool TuneRun::execute(RunnerCallbacks callbacks, const LookCallback& on_look) {
  std::vector<db::TrialPlan> rows;
  // A resumed race's pending round: its leader as when it was planned.
  note_leader(race(space_, race_trials(run_->store(), run_->record().id, tune_), options_));
  for (;;) {
    if (!run_->run_more(rows, callbacks)) {
      run_->finish(false);
      return false;
    }
    // Read once: the costs and the race's replay see the same trials.
    const auto records = stored_trials(run_->store(), run_->record().id, db::TrialFields::all);
    const TrialCosts costs = trial_costs(records);
    const RaceStatus st = race_within(space_, race_trials(run_->store(), records, tune_), options_,
                                      costs, tune_.budget_s);
    if (on_look) on_look({st, costs.spent(), tune_.budget_s});
    if (st.phase == RacePhase::done) {
      run_->finish(true);
      return true;
    }
    note_leader(st);
    int64_t ordinal = 0;
    for (const auto& t : records) ordinal = std::max(ordinal, t.row.plan.ordinal + 1);
    rows.clear();
    // Each round in its own seeded order (racing and confirmation alike).
    for (uint64_t c : round_order(st.next, spec_.measure.order_seed, st.next_round)) {
      rows.push_back(
          trial_row(info_, ordinal++, static_cast<int64_t>(c), st.next_round, space_.config(c)));
    }
  }
}

TuneSpec tune_settings(SweepSpec& spec, const TuneOverrides& overrides) {
  if (spec.measure.precision > 0) {
    throw UsageError(spec.source +
                     ": measure.precision: tune decides its own rounds; drop measure.precision "
                     "(it is for `run`)");
  }
  TuneSpec t = spec.tune.value_or(TuneSpec{});
  if (overrides.objective) {
    t.objective = parse_tune("--objective", Json{{"objective", *overrides.objective}}).objective;
  } else if (spec.measure.target && !t.objective_given) {
    t.objective = Objective::time_to_target;
  }
  if (overrides.constraints) t.constraints = *overrides.constraints;
  if (overrides.budget_s) t.budget_s = *overrides.budget_s;
  if (overrides.seed) t.seed = *overrides.seed;
  for (const auto& c : t.constraints) parse_constraint(c);  // refused before anything runs
  t.race = true;
  spec.tune = t;
  // Capping on by default in a race to a target: a capped trial is evidence.
  if (t.to_target() && spec.measure.target) spec.measure.target->cap_by_default();
  return t;
}

}  // namespace gpusweep::host
