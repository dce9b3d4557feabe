// The race as its replay stands after each look (race() in race_replay.cpp):
// the trials by config and round, and what the looks so far decided. One
// method per step of a look, in the order look() runs them; then the steps
// after the last look (proposals, stopping, the decision, the
// confirmation). The rules themselves are described in race.hpp. Internal
// to the analysis layer.
#pragma once

#include "analysis/race_internal.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host::detail {

// The race as the looks so far left it.
struct RaceFacts {
  std::map<int64_t, std::vector<uint64_t>> racing_rounds;  // round -> the configs it ran
  std::map<int64_t, int> confirmation_rounds;              // round -> its trials run
  std::set<uint64_t> tried;                                // every config with a trial
  std::vector<RaceEvent> events;
  std::set<uint64_t> written_off;   // failed, out of memory, or breaks a constraint
  std::set<uint64_t> shown_slower;  // dropped by a test (it may run on as a reference)
  // The digits of the written-off configs' out-of-memory and failed trials.
  std::vector<std::vector<size_t>> oom_digits, failed_digits;
  // At the last look: the racing configs whose every constraint estimate holds.
  std::set<uint64_t> meeting_at_last_look;
  // When each config was last judged: shown or estimated to break a
  // constraint, or estimated to meet every one.
  std::set<uint64_t> breaking_when_last_judged, meeting_when_last_judged;
  std::map<uint64_t, double> levels;  // at the last look
  std::optional<uint64_t> leader;     // at the last look
  // At the last look: the best level, constraint estimates aside.
  std::optional<uint64_t> fastest_constraints_aside;
  std::vector<uint64_t> still_racing;  // after the last look
  bool all_equivalent = false;         // at the last look: they are all as fast as the leader
  int64_t last_round = -1;
  int64_t looks_spent = 0;  // time to target: the looks that spent alpha so far
};

class RaceState {
 public:
  // Sorts the trials (pending ones only count as tried) into racing and
  // confirmation rounds. It keeps pointers to all three: they must outlive it.
  RaceState(const TuneSpace& space, const std::vector<RaceTrial>& trials,
            const RaceOptions& options);

  // The look after racing round r: every step below, in order.
  void look(int64_t r);

  // Evidence: round r's configs not seen before join the race.
  void join(int64_t r);
  // Evidence: round r's configs still in the running whose outcomes show
  // they cannot be the answer are written off (a transient failure is
  // retried instead); returns the others, racing at this look.
  std::vector<uint64_t> write_off_failures(int64_t r);
  // The one-sided confidence of this look's tests; on time to target, 1
  // where no sign test could reject yet (this look spends no alpha).
  double look_level(int64_t r, const std::vector<uint64_t>& racing);
  // Constraints: judges each racing config on the data up to round r;
  // returns those not shown (or known) to break one.
  std::vector<uint64_t> apply_constraints(int64_t r, double level,
                                          const std::vector<uint64_t>& racing);
  // Refits the configs' levels and picks the leader (and the best
  // regardless of the constraints) among those with two ok rounds.
  void choose_leader(int64_t r, const std::vector<uint64_t>& racing);
  // Elimination: drops each candidate shown slower than the leader at
  // `level`; the rest race on, and whether they are all equivalent to it.
  void eliminate(int64_t r, double level, const std::vector<uint64_t>& racing);

  // After the last look. Proposals: the model's configs for the next
  // round, as many as max_live leaves room for (none without a leader).
  std::vector<uint64_t> proposals() const;
  // Stopping: whether another racing round runs, given the proposals.
  bool races_on(const std::vector<uint64_t>& proposals) const;
  // The next racing round's configs: those still racing, the proposals,
  // and the baseline when a constraint needs it as the reference.
  std::vector<uint64_t> next_round(const std::vector<uint64_t>& proposals) const;
  // Stopping: why the race ended; decide: the budget ended it.
  std::string why_ended(bool decide, const std::vector<uint64_t>& proposals) const;
  // The decision: the leader, or the fastest regardless of the constraints
  // when none meets them (what stop then says); nullopt when no config ran
  // twice without failing.
  std::optional<uint64_t> winner(std::string* stop) const;
  // The best level among the other configs that may lead, dropped or not.
  std::optional<uint64_t> runner_up(uint64_t winner) const;
  // The confirmation's configs: the winner, the runner-up, the baseline.
  std::vector<uint64_t> confirmation_configs(uint64_t winner,
                                             const std::optional<uint64_t>& runner_up) const;
  // The confirmation rounds' estimates (fresh rounds only) into st.
  void estimate_confirmation(RaceStatus& st) const;

  // What the looks so far decided, for the replay to report and the tests
  // to read.
  const RaceFacts& facts() const { return facts_; }
  bool confirming() const { return !facts_.confirmation_rounds.empty(); }

 private:
  const Arm& arm(uint64_t c) const;
  // Elimination on time to target: a paired sign test against the leader.
  bool drop_if_slower_to_target(int64_t r, double level, uint64_t c);
  // Elimination otherwise: the candidate's interval over the leader.
  bool drop_if_slower(int64_t r, double level, uint64_t c, const std::optional<RatioEstimate>& est);
  // Within +-equivalence of the leader at the sequential level, and may lead.
  bool equivalent_to_leader(const std::optional<RatioEstimate>& est, uint64_t c) const;

  const TuneSpace& space_;
  const RaceOptions& options_;
  std::map<uint64_t, Arm> arms_;  // each config's trials
  std::set<uint64_t> joined_;     // every config that ran a racing round
  RaceFacts facts_;
};

}  // namespace gpusweep::host::detail
