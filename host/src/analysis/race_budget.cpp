// The race under a budget: what its trials cost (TrialCosts) and the race
// decided when the budget would not cover what comes next (race_within).
#include "analysis/race.hpp"

#include <algorithm>
#include <map>

namespace gpusweep::host {

TrialCosts::TrialCosts(const std::vector<std::pair<uint64_t, double>>& trials) {
  for (const auto& [c, seconds] : trials) {
    spent_ += seconds;
    ++count_;
    auto& s = by_config_[c];
    s.first += seconds;
    ++s.second;
  }
}

double TrialCosts::of(uint64_t config) const {
  const auto it = by_config_.find(config);
  if (it != by_config_.end()) return it->second.first / it->second.second;
  return count_ == 0 ? 0 : spent_ / static_cast<double>(count_);
}

bool TrialCosts::covers(const RaceStatus& st, const RaceOptions& options, double budget_s) const {
  double round = 0, dearest = st.leader ? of(*st.leader) : 0;
  for (uint64_t c : st.next) {
    round += of(c);
    dearest = std::max(dearest, of(c));
  }
  const double confirm = options.confirm_repeats * (of(options.baseline) + 2 * dearest);
  return spent_ + round + confirm <= budget_s;
}

bool TrialCosts::covers_next(const RaceStatus& st, double budget_s) const {
  double round = 0;
  for (uint64_t c : st.next) round += of(c);
  return spent_ + round <= budget_s;
}

RaceStatus race_within(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                       const RaceOptions& options, const TrialCosts& costs, double budget_s) {
  RaceStatus st = race(space, trials, options);
  const bool racing_over = st.phase == RacePhase::racing && !costs.covers(st, options, budget_s);
  const bool confirming_over = st.phase == RacePhase::confirming &&
                               st.confirm_rounds >= options.confirm_repeats &&
                               !costs.covers_next(st, budget_s);
  if (racing_over || confirming_over) st = race(space, trials, options, /*decide=*/true);
  return st;
}

}  // namespace gpusweep::host
