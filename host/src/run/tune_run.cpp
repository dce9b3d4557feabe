// Tune runs; see tune_run.hpp.
#include "run/tune_run.hpp"

#include "analysis/tune_trials.hpp"
#include "model/hashing.hpp"
#include "support/error.hpp"

#include <algorithm>

namespace gpusweep::host {

TuneRun::TuneRun(const SweepSpec& spec, const PluginInfo& info, RunRequest request, TuneSpec tune)
    : spec_(spec), info_(info), tune_(std::move(tune)), space_(spec, info.manifest) {
  if (spec.grid.empty()) {
    throw UsageError(spec.source +
                     ": grid: a tune needs knobs to search; list values or ranges "
                     "in \"grid\"");
  }
  for (const auto& c : tune_.constraints) constraints_.push_back(parse_constraint(c));
  options_ = race_options(spec, space_, tune_);
  // The first round, for a new run: the baseline and one knob changed at a time.
  const RaceStatus first = race(space_, {}, options_);
  std::vector<PlannedTrial> plan;
  for (uint64_t c : first.next) {
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

RaceStatus TuneRun::status() {
  return race(space_,
              race_trials(run_->store(), run_->record().id, tune_, constraints_, options_.baseline),
              options_);
}

// Long by design: the loop of rounds reads top to bottom: run what is
// pending, look, decide whether the budget allows another round, plan it.
bool TuneRun::execute(RunnerCallbacks callbacks, const LookCallback& on_look) {
  std::vector<db::TrialPlan> rows;
  for (;;) {
    if (!run_->run_more(rows, callbacks)) {
      run_->finish(false);
      return false;
    }
    const auto records = run_->store().trials(run_->record().id);
    const TrialCosts costs = trial_costs(run_->store(), records);
    // Read once: deciding replays the same trials.
    const RaceStatus st = race_within(
        space_,
        race_trials(run_->store(), run_->record().id, tune_, constraints_, options_.baseline),
        options_, costs, tune_.budget_s);
    if (on_look) on_look({st, costs.spent(), tune_.budget_s});
    if (st.phase == RacePhase::done) {
      run_->finish(true);
      return true;
    }
    int64_t ordinal = 0;
    for (const auto& t : records) ordinal = std::max(ordinal, t.plan.ordinal + 1);
    rows.clear();
    for (uint64_t c : st.next) {
      rows.push_back(
          trial_row(info_, ordinal++, static_cast<int64_t>(c), st.next_round, space_.config(c)));
    }
  }
}

}  // namespace gpusweep::host
