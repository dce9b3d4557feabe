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
    tried_.insert(t.config);
    if (t.outcome == Outcome::pending) continue;
    if (t.round >= kConfirmRound) {
      arms_[t.config].confirm.push_back(&t);
      ++confirmation_rounds_[t.round];
    } else {
      arms_[t.config].trials.push_back(&t);
      racing_rounds_[t.round].push_back(t.config);
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
  last_round_ = r;
  join(r);
  std::vector<uint64_t> racing = write_off_failures(r);
  const double level = look_level(r, racing);
  racing = apply_constraints(r, level, racing);
  choose_leader(r, racing);
  eliminate(r, level, racing);
}

void RaceState::join(int64_t r) {
  for (uint64_t c : racing_rounds_.at(r)) {
    if (!joined_.insert(c).second) continue;
    events_.push_back(
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
  for (uint64_t c : racing_rounds_.at(r)) {
    // Dropped: it runs on only as the reference of a relative constraint.
    if (written_off_.count(c) != 0U || shown_slower_.count(c) != 0U) continue;
    const std::string why = infeasible_reason(arm(c), r);
    if (why.empty()) {
      racing.push_back(c);
      for (const RaceTrial* t : arm(c).trials) {
        if (t->round == r && t->outcome == Outcome::transient) {
          events_.push_back({r,
                             RaceEventKind::retried,
                             c,
                             t->reason + ": it runs again in round " + std::to_string(r + 1),
                             {},
                             {}});
        }
      }
      continue;
    }
    written_off_.insert(c);
    events_.push_back({r, RaceEventKind::infeasible, c, why, {}, {}});
    for (const RaceTrial* t : arm(c).trials) {
      if (t->outcome == Outcome::oom) oom_digits_.push_back(space_.digits(c));
      if (t->outcome == Outcome::failed) failed_digits_.push_back(space_.digits(c));
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
  const double level = race_level(options_.alpha, looks_spent_ + 1, tests);
  if (std::pow(0.5, static_cast<double>(r + 1)) > 1 - level) return 1;
  ++looks_spent_;
  return level;
}

std::vector<uint64_t> RaceState::apply_constraints(int64_t r, double level,
                                                   const std::vector<uint64_t>& racing) {
  meeting_at_last_look_.clear();
  const auto base_it = arms_.find(options_.baseline);
  const Arm* base = base_it == arms_.end() ? nullptr : &base_it->second;
  std::vector<uint64_t> kept;
  for (uint64_t c : racing) {
    const ConstraintStanding s = judge_constraints(space_, c, arm(c), base, c == options_.baseline,
                                                   options_.constraints, r, level);
    if (!s.infeasible.empty()) {
      written_off_.insert(c);
      breaking_when_last_judged_.insert(c);
      meeting_when_last_judged_.erase(c);
      events_.push_back({r, RaceEventKind::infeasible, c, s.infeasible, {}, {}});
      continue;
    }
    kept.push_back(c);
    if (s.point_ok) {
      meeting_at_last_look_.insert(c);
      meeting_when_last_judged_.insert(c);
      breaking_when_last_judged_.erase(c);
    } else {
      breaking_when_last_judged_.insert(c);
      meeting_when_last_judged_.erase(c);
    }
  }
  return kept;
}

void RaceState::choose_leader(int64_t r, const std::vector<uint64_t>& racing) {
  levels_ = fit_levels(arms_, r);
  leader_.reset();
  fastest_constraints_aside_.reset();
  for (uint64_t c : racing) {
    if (runs_of(arm(c).trials, r).size() < 2) continue;
    const double y = levels_.at(c);
    if (!fastest_constraints_aside_ || y > levels_.at(*fastest_constraints_aside_)) {
      fastest_constraints_aside_ = c;
    }
    if (meeting_at_last_look_.count(c) == 0U) continue;
    if (!leader_ || y > levels_.at(*leader_)) leader_ = c;
  }
}

void RaceState::eliminate(int64_t r, double level, const std::vector<uint64_t>& racing) {
  still_racing_.clear();
  all_equivalent_ = false;
  if (!leader_) {
    still_racing_ = racing;
    return;
  }
  const auto leader_runs = runs_of(arm(*leader_).trials, r);
  std::vector<uint64_t> tested;  // two or more rounds paired with the leader's
  for (uint64_t c : racing) {
    if (c != *leader_ && paired_rounds(leader_runs, runs_of(arm(c).trials, r)) >= 2) {
      tested.push_back(c);
    }
  }
  // Not on time to target (see race.hpp).
  all_equivalent_ = tested.size() + 1 == racing.size() && !options_.time_to_target;
  for (uint64_t c : racing) {
    if (std::find(tested.begin(), tested.end(), c) == tested.end()) {
      still_racing_.push_back(c);
      continue;
    }
    if (options_.time_to_target) {
      if (!drop_if_slower_to_target(r, level, c)) still_racing_.push_back(c);
      continue;
    }
    // A one-sided bound at `level` is a two-sided interval at 2 level - 1.
    const auto est = estimate_ratio(leader_runs, runs_of(arm(c).trials, r), 2 * level - 1);
    if (drop_if_slower(r, level, c, est)) continue;
    still_racing_.push_back(c);
    all_equivalent_ = all_equivalent_ && equivalent_to_leader(est, c);
  }
}

bool RaceState::drop_if_slower_to_target(int64_t r, double level, uint64_t c) {
  const auto lt = times_of(arm(*leader_).trials, r);
  const auto ct = times_of(arm(c).trials, r);
  const SignTest sign = slower_by_sign(lt, ct);
  if (!(level < 1 && sign.p <= 1 - level)) return false;
  shown_slower_.insert(c);
  events_.push_back({r, RaceEventKind::dropped, c,
                     "slower to the target than the leader in " + std::to_string(sign.slower) +
                         " of " + std::to_string(sign.pairs) +
                         " paired rounds (censored rounds counted slower only when known to be): "
                         "one-sided sign test p " +
                         fixed(sign.p, 5) + " <= " + fixed(1 - level, 5),
                     speed_of(paired_time_ratio(lt, ct)), leader_});
  return true;
}

bool RaceState::drop_if_slower(int64_t r, double level, uint64_t c,
                               const std::optional<RatioEstimate>& est) {
  if (!est || est->design != RatioDesign::repeats || !(est->high < 1)) return false;
  shown_slower_.insert(c);
  events_.push_back({r, RaceEventKind::dropped, c,
                     fixed(est->ratio, 3) + "x of the leader, below " + fixed(est->high, 3) +
                         " at " + fixed(100 * level, 2) + "% (one-sided) over " +
                         std::to_string(est->repeats) + " paired rounds",
                     est, leader_});
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
         eq.high <= 1 + options_.equivalence && meeting_at_last_look_.count(c) != 0U;
}

}  // namespace gpusweep::host::detail
