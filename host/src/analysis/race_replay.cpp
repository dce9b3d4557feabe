// The race's replay (race()): look after look over the trials, then the
// decision and the confirmation; with its events' names and its looks' level
// (race_level). Its parts are in race_internal.hpp.
#include "analysis/race_internal.hpp"

#include "analysis/precision.hpp"
#include "analysis/time_to_target.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

namespace gpusweep::host {

namespace {

constexpr double kPi = 3.14159265358979323846;

}  // namespace

// The parts the replay reads (race_internal.hpp).
using detail::Arm;
using detail::constraint_avoid;
using detail::ConstraintStanding;
using detail::fit_levels;
using detail::infeasible_reason;
using detail::judge_constraints;
using detail::needs_reference;
using detail::noisy;
using detail::Outcome;
using detail::paired_rounds;
using detail::propose;
using detail::runs_of;
using detail::speed_of;
using detail::times_of;

const char* event_name(RaceEventKind k) {
  switch (k) {
    case RaceEventKind::joined:
      return "joined";
    case RaceEventKind::dropped:
      return "dropped";
    case RaceEventKind::infeasible:
      return "infeasible";
    case RaceEventKind::decided:
      return "decided";
    case RaceEventKind::retried:
      return "retried";
  }
  return "?";
}

double race_level(double alpha, int64_t look, size_t tests) {
  const double k = static_cast<double>(std::max<int64_t>(1, look));
  return 1 - alpha * 6 / (kPi * kPi * k * k) / static_cast<double>(std::max<size_t>(1, tests));
}

// Long by design: the replay reads as the race ran, look after look, then
// the decision and the confirmation, each step with its reason.
RaceStatus race(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                const RaceOptions& options, bool decide) {
  RaceStatus st;
  std::map<uint64_t, Arm> arms;
  std::map<int64_t, std::vector<uint64_t>> rounds;  // racing round -> its configs
  std::map<int64_t, int> confirm_rounds;            // confirmation round -> trials done
  for (const RaceTrial& t : trials) {
    st.tried.insert(t.config);
    if (t.outcome == Outcome::pending) continue;
    if (t.round >= kConfirmRound) {
      arms[t.config].confirm.push_back(&t);
      ++confirm_rounds[t.round];
    } else {
      arms[t.config].trials.push_back(&t);
      rounds[t.round].push_back(t.config);
    }
  }
  for (auto& [c, arm] : arms) {
    std::sort(arm.trials.begin(), arm.trials.end(),
              [](const RaceTrial* a, const RaceTrial* b) { return a->round < b->round; });
  }
  if (rounds.empty()) {
    st.next = screening_round(
        space, options.baseline,
        std::max<size_t>(static_cast<size_t>(options.max_live), 2 * space.knobs() + 1));
    st.next_round = 0;
    for (uint64_t c : st.next) {
      st.events.push_back(
          {0, RaceEventKind::joined, c, "screening: the baseline or one knob changed", {}, {}});
    }
    return st;
  }

  std::set<uint64_t> dropped, infeasible;
  std::vector<std::vector<size_t>> oom_digits, failed_digits;
  std::set<uint64_t> seen;
  std::vector<uint64_t> survivors;
  std::map<uint64_t, double> levels;
  std::optional<uint64_t> leader;
  bool close = false;           // at the last look: the survivors are equivalent to the leader
  std::set<uint64_t> may_lead;  // at the last look: their constraint estimates hold
  std::set<uint64_t> breakers;  // shown to break a noisy constraint, or estimated to (last judged)
  std::set<uint64_t> meeters;   // estimated to meet every constraint (last judged)
  std::optional<uint64_t> provisional;  // at the last look: the best, constraints aside
  int64_t last = -1;
  int64_t time_looks = 0;  // time to target: the looks that spent alpha so far
  for (const auto& [r, configs] : rounds) {
    last = r;
    for (uint64_t c : configs) {
      if (seen.insert(c).second) {
        st.events.push_back(
            {r,
             RaceEventKind::joined,
             c,
             r == 0 ? "screening: the baseline or one knob changed" : "proposed by the model",
             {},
             {}});
      }
    }
    // Out of memory or failed: out of the race; failed transiently: again.
    std::vector<uint64_t> live;
    for (uint64_t c : configs) {
      // Dropped: it runs on only as the reference of a relative constraint.
      if (infeasible.count(c) != 0U || dropped.count(c) != 0U) continue;
      const std::string why = infeasible_reason(arms[c], r);
      if (why.empty()) {
        live.push_back(c);
        for (const RaceTrial* t : arms[c].trials) {
          if (t->round == r && t->outcome == Outcome::transient) {
            st.events.push_back({r,
                                 RaceEventKind::retried,
                                 c,
                                 t->reason + ": it runs again in round " + std::to_string(r + 1),
                                 {},
                                 {}});
          }
        }
        continue;
      }
      infeasible.insert(c);
      st.events.push_back({r, RaceEventKind::infeasible, c, why, {}, {}});
      for (const RaceTrial* t : arms[c].trials) {
        if (t->outcome == Outcome::oom) oom_digits.push_back(space.digits(c));
        if (t->outcome == Outcome::failed) failed_digits.push_back(space.digits(c));
      }
    }
    // Every test of this look, one-sided at `level`: a pair (leader,
    // candidate) for each config that could have been the leader (the true
    // best might have been tested against any of them), and the noisy
    // constraints of the true best.
    size_t contenders = 0;
    for (uint64_t c : live) contenders += runs_of(arms[c].trials, r).size() >= 2;
    size_t noisy_constraints = 0;
    for (const auto& k : options.constraints) noisy_constraints += noisy(k);
    const size_t tests = std::max<size_t>(1, contenders) - 1 + noisy_constraints;
    double level = race_level(options.alpha, std::max<int64_t>(1, r), tests);
    if (options.time_to_target) {
      // A look spends only where a sign test over the r + 1 rounds so far
      // could reject at the next term of the series; elsewhere no test runs
      // (level 1) and the series waits (see race.hpp).
      level = race_level(options.alpha, time_looks + 1, tests);
      if (std::pow(0.5, static_cast<double>(r + 1)) <= 1 - level) {
        ++time_looks;
      } else {
        level = 1;
      }
    }
    // The constraints on the data up to this round.
    may_lead.clear();
    {
      const auto base_it = arms.find(options.baseline);
      const Arm* base = base_it == arms.end() ? nullptr : &base_it->second;
      std::vector<uint64_t> kept;
      for (uint64_t c : live) {
        const ConstraintStanding s = judge_constraints(
            space, c, arms[c], base, c == options.baseline, options.constraints, r, level);
        if (!s.infeasible.empty()) {
          infeasible.insert(c);
          breakers.insert(c);
          meeters.erase(c);
          st.events.push_back({r, RaceEventKind::infeasible, c, s.infeasible, {}, {}});
          continue;
        }
        kept.push_back(c);
        if (s.point_ok) {
          may_lead.insert(c);
          meeters.insert(c);
          breakers.erase(c);
        } else {
          breakers.insert(c);
          meeters.erase(c);
        }
      }
      live = std::move(kept);
    }
    levels = fit_levels(arms, r);
    // The leader: the best level among the live configs with two ok rounds
    // whose constraint estimates hold.
    leader.reset();
    provisional.reset();
    for (uint64_t c : live) {
      if (runs_of(arms[c].trials, r).size() < 2) continue;
      if (!provisional || levels[c] > levels[*provisional]) provisional = c;
      if (may_lead.count(c) == 0U) continue;
      if (!leader || levels[c] > levels[*leader]) leader = c;
    }
    survivors.clear();
    close = false;
    if (!leader) {
      survivors = live;
      continue;
    }
    const auto leader_runs = runs_of(arms[*leader].trials, r);
    std::vector<uint64_t> tested;
    for (uint64_t c : live) {
      if (c != *leader && paired_rounds(leader_runs, runs_of(arms[c].trials, r)) >= 2) {
        tested.push_back(c);
      }
    }
    // A one-sided bound at `level` is a two-sided interval at 2 level - 1.
    const double interval = 2 * level - 1;
    // Every other survivor within +-options.equivalence of the leader, at
    // the same level: the race cannot tell them apart, and need not. Not on
    // time to target (see race.hpp).
    close = tested.size() + 1 == live.size() && !options.time_to_target;
    for (uint64_t c : live) {
      if (std::find(tested.begin(), tested.end(), c) == tested.end()) {
        survivors.push_back(c);
        continue;
      }
      if (options.time_to_target) {
        const auto lt = times_of(arms[*leader].trials, r);
        const auto ct = times_of(arms[c].trials, r);
        const SignTest sign = slower_by_sign(lt, ct);
        if (level < 1 && sign.p <= 1 - level) {
          dropped.insert(c);
          st.events.push_back(
              {r, RaceEventKind::dropped, c,
               "slower to the target than the leader in " + std::to_string(sign.slower) + " of " +
                   std::to_string(sign.pairs) +
                   " paired rounds (censored rounds counted slower only when known to be): "
                   "one-sided sign test p " +
                   fixed(sign.p, 5) + " <= " + fixed(1 - level, 5),
               speed_of(paired_time_ratio(lt, ct)), leader});
        } else {
          survivors.push_back(c);
        }
        continue;
      }
      const auto est = estimate_ratio(leader_runs, runs_of(arms[c].trials, r), interval);
      if (est && est->design == RatioDesign::repeats && est->high < 1) {
        dropped.insert(c);
        st.events.push_back({r, RaceEventKind::dropped, c,
                             fixed(est->ratio, 3) + "x of the leader, below " +
                                 fixed(est->high, 3) + " at " + fixed(100 * level, 2) +
                                 "% (one-sided) over " + std::to_string(est->repeats) +
                                 " paired rounds",
                             est, leader});
      } else {
        survivors.push_back(c);
        // Ending on equivalence drops nobody (the runner-up is confirmed
        // against the winner), so it needs none of the drops' alpha: at the
        // drops' shrinking level two configs 2-3% apart were neither dropped
        // nor shown equivalent for 170 rounds of a 10-minute budget. At the
        // sequential level, as compare's intervals of rounds that stop.
        const auto eq = est ? std::optional<RatioEstimate>(with_level(*est, sequential_level(0.05)))
                            : std::nullopt;
        close = close && eq && eq->design == RatioDesign::repeats &&
                eq->low >= 1 - options.equivalence && eq->high <= 1 + options.equivalence &&
                may_lead.count(c) != 0U;
      }
    }
  }
  st.rounds = last + 1;
  st.leader = leader;
  st.live = survivors;
  for (const auto& [c, y] : levels) st.levels.push_back({c, y});

  // The runner-up: the best level among the other feasible configs with two
  // ok rounds, dropped or not.
  auto runner_up_of = [&](uint64_t winner) -> std::optional<uint64_t> {
    std::optional<uint64_t> best;
    for (const auto& [c, y] : levels) {
      if (c == winner || infeasible.count(c) != 0U || may_lead.count(c) == 0U ||
          runs_of(arms[c].trials, last).size() < 2) {
        continue;
      }
      if (!best || y > levels[*best]) best = c;
    }
    return best;
  };
  auto confirmation_set = [&] {
    std::vector<uint64_t> set = {*st.winner};
    if (st.runner_up) set.push_back(*st.runner_up);
    if (options.baseline != *st.winner && (!st.runner_up || options.baseline != *st.runner_up) &&
        infeasible.count(options.baseline) == 0U) {
      set.push_back(options.baseline);
    }
    return set;
  };

  if (!confirm_rounds.empty() || decide) {
    st.stop = survivors.size() <= 1 && !confirm_rounds.empty()
                  ? "one candidate left, and the model proposes none"
              : close && !confirm_rounds.empty()
                  ? "the " + std::to_string(survivors.size()) + " candidates left are within " +
                        fixed(100 * options.equivalence, 0) + "% of each other"
                  : "the budget ended the race with " + std::to_string(survivors.size()) +
                        " candidates left";
  } else {
    std::vector<uint64_t> proposals;
    if (leader) {
      const size_t room = static_cast<size_t>(std::max(0, options.max_live)) > survivors.size()
                              ? static_cast<size_t>(options.max_live) - survivors.size()
                              : 0;
      proposals = propose(space, levels, failed_digits, st.tried, oom_digits,
                          constraint_avoid(space, breakers, meeters, arms, last), *leader,
                          std::min<size_t>(room, static_cast<size_t>(options.proposals_per_round)),
                          options.seed, last + 1);
    }
    const bool equivalent = close && survivors.size() > 1 && proposals.empty();
    if ((survivors.size() > 1 && !equivalent) || !proposals.empty() || !leader) {
      if (survivors.empty() && proposals.empty()) {
        st.phase = RacePhase::done;
        st.stop = "no config of the space can run here (every candidate failed)";
        return st;
      }
      st.next = survivors;
      st.next.insert(st.next.end(), proposals.begin(), proposals.end());
      // A constraint relative to the baseline's noisy metric needs the
      // baseline measured alongside, round by round, also once it is out of
      // the running: its paired rounds are what the test stands on.
      if (needs_reference(options) && dropped.count(options.baseline) != 0U &&
          infeasible.count(options.baseline) == 0U) {
        st.next.push_back(options.baseline);
      }
      st.next_round = last + 1;
      return st;
    }
    st.stop = equivalent
                  ? "the " + std::to_string(survivors.size()) + " candidates left are within " +
                        fixed(100 * options.equivalence, 0) +
                        "% of each other, and the model proposes none"
                  : "one candidate left, and the model proposes none";
  }
  if (!leader && provisional) {
    // Every candidate left has an estimate beyond a constraint, none shown:
    // the fastest of them, said so.
    leader = provisional;
    st.leader = leader;
    st.stop +=
        "; no candidate's estimates meet every constraint (none is shown to break one): the "
        "winner is the fastest of them";
  }
  if (!leader) {
    st.phase = RacePhase::done;
    st.stop += "; no config ran twice without failing: no winner";
    return st;
  }
  st.winner = leader;
  st.runner_up = runner_up_of(*leader);
  st.events.push_back({last, RaceEventKind::decided, *leader, st.stop, {}, {}});
  // Confirmation: fresh rounds of the winner, the runner-up and the baseline.
  for (const auto& [round, n] : confirm_rounds) st.confirm_rounds += n > 0;
  auto confirm_runs = [&](uint64_t c) { return runs_of(arms[c].confirm, INT64_MAX); };
  // At the sequential level: the confirmation stops when an interval is narrow.
  if (st.confirm_rounds >= 2 && options.time_to_target) {
    // Speeds from the paired time ratios at 95%: the confirmation's rounds
    // are fixed in number, not stopped on a narrow interval.
    const auto winner_times = times_of(arms[*st.winner].confirm, INT64_MAX);
    if (options.baseline != *st.winner) {
      st.vs_baseline = speed_of(
          paired_time_ratio(times_of(arms[options.baseline].confirm, INT64_MAX), winner_times));
    }
    if (st.runner_up) {
      st.vs_runner_up = speed_of(
          paired_time_ratio(times_of(arms[*st.runner_up].confirm, INT64_MAX), winner_times));
    }
  } else if (st.confirm_rounds >= 2) {
    if (options.baseline != *st.winner) {
      st.vs_baseline = estimate_ratio(confirm_runs(options.baseline), confirm_runs(*st.winner),
                                      sequential_level(0.05));
    }
    if (st.runner_up) {
      st.vs_runner_up = estimate_ratio(confirm_runs(*st.runner_up), confirm_runs(*st.winner),
                                       sequential_level(0.05));
    }
  }
  const auto& target = st.vs_baseline ? st.vs_baseline : st.vs_runner_up;
  const bool precise = options.time_to_target || !target ||
                       (target->ratio > 0 && (target->high - target->low) / 2 / target->ratio <=
                                                 options.confirm_precision);
  if (st.confirm_rounds >= options.confirm_repeats &&
      (decide || precise || st.confirm_rounds >= options.max_confirm_rounds)) {
    st.phase = RacePhase::done;
    return st;
  }
  st.phase = RacePhase::confirming;
  st.next = confirmation_set();
  st.next_round = kConfirmRound + st.confirm_rounds;
  return st;
}

}  // namespace gpusweep::host
