// The steps of a race's look (race_state.hpp): joins, failures, the look's
// level, the constraints, the leader and the elimination.
#include "analysis/race_state.hpp"

#include "analysis/precision.hpp"
#include "analysis/time_to_target.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>

namespace gpusweep::host::detail {

RaceState::RaceState(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                     const RaceOptions& options)
    : space_(space), options_(options) {
  for (const RaceTrial& t : trials) {
    facts_.tried.insert(t.config);
    if (t.outcome == Outcome::pending) continue;
    if (t.round >= kConfirmRound) {
      arms_[t.config].confirm.push_back(&t);
      ++facts_.confirmation_rounds[t.round];
    } else {
      arms_[t.config].trials.push_back(&t);
      facts_.racing_rounds[t.round].push_back(t.config);
    }
  }
  for (auto& [c, a] : arms_) {
    std::sort(a.trials.begin(), a.trials.end(),
              [](const RaceTrial* x, const RaceTrial* y) { return x->round < y->round; });
  }
}

const Arm& RaceState::arm(uint64_t c) const {
  static const Arm none;
  const auto it = arms_.find(c);
  return it == arms_.end() ? none : it->second;
}

void RaceState::look(int64_t r) {
  facts_.last_round = r;
  join(r);
  std::vector<uint64_t> racing = write_off_failures(r);
  const double level = look_level(r, racing);
  racing = apply_constraints(r, level, racing);
  choose_leader(r, racing);
  eliminate(r, level, racing);
}

void RaceState::join(int64_t r) {
  for (uint64_t c : facts_.racing_rounds.at(r)) {
    if (!joined_.insert(c).second) continue;
    facts_.events.push_back(
        {r,
         RaceEventKind::joined,
         c,
         r == 0 ? "screening: the baseline or one knob changed" : "proposed by the model",
         {},
         {}});
  }
}

std::vector<uint64_t> RaceState::write_off_failures(int64_t r) {
  std::vector<uint64_t> racing;
  for (uint64_t c : facts_.racing_rounds.at(r)) {
    // Dropped: it runs on only as the reference of a relative constraint.
    if (facts_.written_off.count(c) != 0U || facts_.shown_slower.count(c) != 0U) continue;
    const std::string why = infeasible_reason(arm(c), r);
    if (why.empty()) {
      racing.push_back(c);
      for (const RaceTrial* t : arm(c).trials) {
        if (t->round == r && t->outcome == Outcome::transient) {
          facts_.events.push_back({r,
                                   RaceEventKind::retried,
                                   c,
                                   t->reason + ": it runs again in round " + std::to_string(r + 1),
                                   {},
                                   {}});
        }
      }
      continue;
    }
    facts_.written_off.insert(c);
    facts_.events.push_back({r, RaceEventKind::infeasible, c, why, {}, {}});
    for (const RaceTrial* t : arm(c).trials) {
      if (t->outcome == Outcome::oom) facts_.oom_digits.push_back(space_.digits(c));
      if (t->outcome == Outcome::failed) facts_.failed_digits.push_back(space_.digits(c));
    }
  }
  return racing;
}

double RaceState::look_level(int64_t r, const std::vector<uint64_t>& racing) {
  // A pair (leader, candidate) for each config that could have been the
  // leader (the true best might have been tested against any of them), and
  // the noisy constraints of the true best.
  size_t contenders = 0;
  for (uint64_t c : racing) contenders += runs_of(arm(c).trials, r).size() >= 2;
  size_t noisy_constraints = 0;
  for (const auto& k : options_.constraints) noisy_constraints += noisy(k);
  const size_t tests = std::max<size_t>(1, contenders) - 1 + noisy_constraints;
  if (!options_.time_to_target) return race_level(options_.alpha, std::max<int64_t>(1, r), tests);
  // The series' next term, spent only where a sign test over the r + 1
  // rounds so far could reject at it (see race.hpp).
  const double level = race_level(options_.alpha, facts_.looks_spent + 1, tests);
  if (std::pow(0.5, static_cast<double>(r + 1)) > 1 - level) return 1;
  ++facts_.looks_spent;
  return level;
}

std::vector<uint64_t> RaceState::apply_constraints(int64_t r, double level,
                                                   const std::vector<uint64_t>& racing) {
  facts_.meeting_at_last_look.clear();
  const auto base_it = arms_.find(options_.baseline);
  const Arm* base = base_it == arms_.end() ? nullptr : &base_it->second;
  std::vector<uint64_t> kept;
  for (uint64_t c : racing) {
    const ConstraintStanding s = judge_constraints(space_, c, arm(c), base, c == options_.baseline,
                                                   options_.constraints, r, level);
    if (!s.infeasible.empty()) {
      facts_.written_off.insert(c);
      facts_.breaking_when_last_judged.insert(c);
      facts_.meeting_when_last_judged.erase(c);
      facts_.events.push_back({r, RaceEventKind::infeasible, c, s.infeasible, {}, {}});
      continue;
    }
    kept.push_back(c);
    if (s.point_ok) {
      facts_.meeting_at_last_look.insert(c);
      facts_.meeting_when_last_judged.insert(c);
      facts_.breaking_when_last_judged.erase(c);
    } else {
      facts_.breaking_when_last_judged.insert(c);
      facts_.meeting_when_last_judged.erase(c);
    }
  }
  return kept;
}

void RaceState::choose_leader(int64_t r, const std::vector<uint64_t>& racing) {
  facts_.levels = fit_levels(arms_, r);
  facts_.leader.reset();
  facts_.fastest_constraints_aside.reset();
  for (uint64_t c : racing) {
    if (runs_of(arm(c).trials, r).size() < 2) continue;
    const double y = facts_.levels.at(c);
    if (!facts_.fastest_constraints_aside ||
        y > facts_.levels.at(*facts_.fastest_constraints_aside)) {
      facts_.fastest_constraints_aside = c;
    }
    if (facts_.meeting_at_last_look.count(c) == 0U) continue;
    if (!facts_.leader || y > facts_.levels.at(*facts_.leader)) facts_.leader = c;
  }
}

void RaceState::eliminate(int64_t r, double level, const std::vector<uint64_t>& racing) {
  facts_.still_racing.clear();
  facts_.all_equivalent = false;
  if (!facts_.leader) {
    facts_.still_racing = racing;
    return;
  }
  const auto leader_runs = runs_of(arm(*facts_.leader).trials, r);
  std::vector<uint64_t> tested;  // two or more rounds paired with the leader's
  for (uint64_t c : racing) {
    if (c != *facts_.leader && paired_rounds(leader_runs, runs_of(arm(c).trials, r)) >= 2) {
      tested.push_back(c);
    }
  }
  // Not on time to target (see race.hpp).
  facts_.all_equivalent = tested.size() + 1 == racing.size() && !options_.time_to_target;
  for (uint64_t c : racing) {
    if (std::find(tested.begin(), tested.end(), c) == tested.end()) {
      facts_.still_racing.push_back(c);
      continue;
    }
    if (options_.time_to_target) {
      if (!drop_if_slower_to_target(r, level, c)) facts_.still_racing.push_back(c);
      continue;
    }
    // A one-sided bound at `level` is a two-sided interval at 2 level - 1.
    const auto est = estimate_ratio(leader_runs, runs_of(arm(c).trials, r), 2 * level - 1);
    if (drop_if_slower(r, level, c, est)) continue;
    facts_.still_racing.push_back(c);
    facts_.all_equivalent = facts_.all_equivalent && equivalent_to_leader(est, c);
  }
}

bool RaceState::drop_if_slower_to_target(int64_t r, double level, uint64_t c) {
  const auto lt = times_of(arm(*facts_.leader).trials, r);
  const auto ct = times_of(arm(c).trials, r);
  const SignTest sign = slower_by_sign(lt, ct);
  if (!(level < 1 && sign.p <= 1 - level)) return false;
  facts_.shown_slower.insert(c);
  facts_.events.push_back(
      {r, RaceEventKind::dropped, c,
       "slower to the target than the leader in " + std::to_string(sign.slower) + " of " +
           std::to_string(sign.pairs) +
           " paired rounds (censored rounds counted slower only when known to be): "
           "one-sided sign test p " +
           fixed(sign.p, 5) + " <= " + fixed(1 - level, 5),
       speed_of(paired_time_ratio(lt, ct)), facts_.leader});
  return true;
}

bool RaceState::drop_if_slower(int64_t r, double level, uint64_t c,
                               const std::optional<RatioEstimate>& est) {
  if (!est || est->design != RatioDesign::repeats || !(est->high < 1)) return false;
  facts_.shown_slower.insert(c);
  facts_.events.push_back({r, RaceEventKind::dropped, c,
                           fixed(est->ratio, 3) + "x of the leader, below " + fixed(est->high, 3) +
                               " at " + fixed(100 * level, 2) + "% (one-sided) over " +
                               std::to_string(est->repeats) + " paired rounds",
                           est, facts_.leader});
  return true;
}

// Ending on equivalence drops nobody (the runner-up is confirmed against the
// winner), so it needs none of the drops' alpha: at the drops' shrinking
// level two configs 2-3% apart were neither dropped nor shown equivalent for
// 170 rounds of a 10-minute budget. At the sequential level, as compare's
// intervals of rounds that stop.
bool RaceState::equivalent_to_leader(const std::optional<RatioEstimate>& est, uint64_t c) const {
  if (!est) return false;
  const RatioEstimate eq = with_level(*est, sequential_level(0.05));
  return eq.design == RatioDesign::repeats && eq.low >= 1 - options_.equivalence &&
         eq.high <= 1 + options_.equivalence && facts_.meeting_at_last_look.count(c) != 0U;
}

}  // namespace gpusweep::host::detail
