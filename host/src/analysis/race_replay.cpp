// The race's replay (race()): look after look over the trials, then the
// proposals or the decision and the confirmation; with its events' names and
// its looks' level (race_level). The steps of a look are in race_state.cpp.
#include "analysis/race_state.hpp"

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

using detail::RaceState;

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

namespace detail {

std::vector<uint64_t> RaceState::proposals() const {
  if (!facts_.leader) return {};
  const size_t room =
      static_cast<size_t>(std::max(0, options_.max_live)) > facts_.still_racing.size()
          ? static_cast<size_t>(options_.max_live) - facts_.still_racing.size()
          : 0;
  return propose(space_, facts_.levels, facts_.failed_digits, facts_.tried, facts_.oom_digits,
                 constraint_avoid(space_, facts_.breaking_when_last_judged,
                                  facts_.meeting_when_last_judged, arms_, facts_.last_round),
                 *facts_.leader,
                 std::min<size_t>(room, static_cast<size_t>(options_.proposals_per_round)),
                 options_.seed, facts_.last_round + 1);
}

bool RaceState::races_on(const std::vector<uint64_t>& proposals) const {
  const bool equivalent =
      facts_.all_equivalent && facts_.still_racing.size() > 1 && proposals.empty();
  return (facts_.still_racing.size() > 1 && !equivalent) || !proposals.empty() || !facts_.leader;
}

std::vector<uint64_t> RaceState::next_round(const std::vector<uint64_t>& proposals) const {
  std::vector<uint64_t> next = facts_.still_racing;
  next.insert(next.end(), proposals.begin(), proposals.end());
  // A constraint relative to the baseline's noisy metric needs the baseline
  // measured alongside, round by round, also once it is out of the running:
  // its paired rounds are what the test stands on.
  if (needs_reference(options_) && facts_.shown_slower.count(options_.baseline) != 0U &&
      facts_.written_off.count(options_.baseline) == 0U) {
    next.push_back(options_.baseline);
  }
  return next;
}

std::string RaceState::why_ended(bool decide, const std::vector<uint64_t>& proposals) const {
  const std::string left = std::to_string(facts_.still_racing.size());
  const std::string within = "the " + left + " candidates left are within " +
                             fixed(100 * options_.equivalence, 0) + "% of each other";
  if (confirming() || decide) {
    if (facts_.still_racing.size() <= 1 && confirming()) {
      return "one candidate left, and the model proposes none";
    }
    if (facts_.all_equivalent && confirming()) return within;
    return "the budget ended the race with " + left + " candidates left";
  }
  const bool equivalent =
      facts_.all_equivalent && facts_.still_racing.size() > 1 && proposals.empty();
  return equivalent ? within + ", and the model proposes none"
                    : "one candidate left, and the model proposes none";
}

std::optional<uint64_t> RaceState::winner(std::string* stop) const {
  if (facts_.leader || !facts_.fastest_constraints_aside) return facts_.leader;
  // Every candidate left has an estimate beyond a constraint, none shown.
  *stop +=
      "; no candidate's estimates meet every constraint (none is shown to break one): the "
      "winner is the fastest of them";
  return facts_.fastest_constraints_aside;
}

std::optional<uint64_t> RaceState::runner_up(uint64_t winner) const {
  std::optional<uint64_t> best;
  for (const auto& [c, y] : facts_.levels) {
    if (c == winner || facts_.written_off.count(c) != 0U ||
        facts_.meeting_at_last_look.count(c) == 0U ||
        runs_of(arm(c).trials, facts_.last_round).size() < 2) {
      continue;
    }
    if (!best || y > facts_.levels.at(*best)) best = c;
  }
  return best;
}

std::vector<uint64_t> RaceState::confirmation_configs(
    uint64_t winner, const std::optional<uint64_t>& runner_up) const {
  std::vector<uint64_t> configs = {winner};
  if (runner_up) configs.push_back(*runner_up);
  if (options_.baseline != winner && (!runner_up || options_.baseline != *runner_up) &&
      facts_.written_off.count(options_.baseline) == 0U) {
    configs.push_back(options_.baseline);
  }
  return configs;
}

void RaceState::estimate_confirmation(RaceStatus& st) const {
  if (st.confirm_rounds < 2) return;
  const uint64_t winner = *st.winner;
  const uint64_t baseline = options_.baseline;
  if (options_.time_to_target) {
    // Speeds from the paired time ratios at 95%: the confirmation's rounds
    // are fixed in number, not stopped on a narrow interval.
    const auto winner_times = times_of(arm(winner).confirm, INT64_MAX);
    if (baseline != winner) {
      st.vs_baseline =
          speed_of(paired_time_ratio(times_of(arm(baseline).confirm, INT64_MAX), winner_times));
    }
    if (st.runner_up) {
      st.vs_runner_up = speed_of(
          paired_time_ratio(times_of(arm(*st.runner_up).confirm, INT64_MAX), winner_times));
    }
    return;
  }
  // At the sequential level: the confirmation stops when an interval is narrow.
  auto runs = [&](uint64_t c) { return runs_of(arm(c).confirm, INT64_MAX); };
  if (baseline != winner) {
    st.vs_baseline = estimate_ratio(runs(baseline), runs(winner), sequential_level(0.05));
  }
  if (st.runner_up) {
    st.vs_runner_up = estimate_ratio(runs(*st.runner_up), runs(winner), sequential_level(0.05));
  }
}

}  // namespace detail

namespace {

// The first round, before any trial: the screening.
RaceStatus screening(const TuneSpace& space, const RaceOptions& options,
                     const std::set<uint64_t>& tried) {
  RaceStatus st;
  st.tried = tried;
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

// The confirmation of st's winner: its estimates, and whether it is done
// or which configs run its next round.
void confirm(const RaceState& state, const RaceOptions& options, bool decide, RaceStatus& st) {
  for (const auto& [round, n] : state.facts().confirmation_rounds) st.confirm_rounds += n > 0;
  state.estimate_confirmation(st);
  const auto& target = st.vs_baseline ? st.vs_baseline : st.vs_runner_up;
  const bool precise =
      options.time_to_target || !target ||
      (target->ratio > 0 && target->relative_half_width() <= options.confirm_precision);
  if (st.confirm_rounds >= options.confirm_repeats &&
      (decide || precise || st.confirm_rounds >= options.max_confirm_rounds)) {
    st.phase = RacePhase::done;
    return;
  }
  st.phase = RacePhase::confirming;
  st.next = state.confirmation_configs(*st.winner, st.runner_up);
  st.next_round = kConfirmRound + st.confirm_rounds;
}

}  // namespace

RaceStatus race(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                const RaceOptions& options, bool decide) {
  RaceState state(space, trials, options);
  if (state.facts().racing_rounds.empty()) return screening(space, options, state.facts().tried);
  for (const auto& [r, configs] : state.facts().racing_rounds) state.look(r);

  RaceStatus st;
  st.tried = state.facts().tried;
  st.rounds = state.facts().last_round + 1;
  st.leader = state.facts().leader;
  st.live = state.facts().still_racing;
  for (const auto& [c, y] : state.facts().levels) st.levels.push_back({c, y});
  st.events = state.facts().events;
  std::vector<uint64_t> proposals;
  if (!state.confirming() && !decide) {
    proposals = state.proposals();
    if (state.races_on(proposals)) {
      if (state.facts().still_racing.empty() && proposals.empty()) {
        st.phase = RacePhase::done;
        st.stop = "no config of the space can run here (every candidate failed)";
        return st;
      }
      st.next = state.next_round(proposals);
      st.next_round = state.facts().last_round + 1;
      return st;
    }
  }
  st.stop = state.why_ended(decide, proposals);
  const std::optional<uint64_t> winner = state.winner(&st.stop);
  if (!winner) {
    st.phase = RacePhase::done;
    st.stop += "; no config ran twice without failing: no winner";
    return st;
  }
  st.leader = winner;
  st.winner = winner;
  st.runner_up = state.runner_up(*winner);
  st.events.push_back({state.facts().last_round, RaceEventKind::decided, *winner, st.stop, {}, {}});
  confirm(state, options, decide, st);
  return st;
}

}  // namespace gpusweep::host
