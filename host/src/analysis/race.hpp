// `gpusweep tune`'s race: candidates run in rounds, one trial each a round;
// after each round a look drops a candidate that a one-sided test shows
// worse than the leader (or past a noisy constraint), proposes new ones from
// a model of the knobs' effects, and ends the race when one candidate is
// left or all left are within options.equivalence of the leader. Look k
// tests at alpha * 6 / (pi^2 k^2) / m (m tests at that look), so the true
// best is dropped with probability at most alpha over the whole race. On
// time to target the test is a paired sign test that counts a censored
// round as slower only when it is known to be. The race is a pure function
// of the trials: a replay from the database gives the same drops and
// winner. The rule, its error bound and what lies outside it: docs/tune.md.
#pragma once

#include "analysis/constraints.hpp"
#include "analysis/ratio_model.hpp"
#include "spec/tune.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host {

// The first confirmation round's number (the trial's repeat).
constexpr int64_t kConfirmRound = 1000000;

// One trial of a tune run as the race sees it.
struct RaceTrial {
  enum class Outcome {
    ok,         // values hold its objective
    pending,    // not run yet (or interrupted): no information
    oom,        // ran out of memory: rules out larger batches too
    failed,     // failed or skipped (the plugin's own verdict): the config is dropped
    transient,  // timed out or crashed: run again once, dropped when that fails too
    excluded,   // ran, but breaks a deterministic constraint (reason says which)
  };
  uint64_t config = 0;
  int64_t round = 0;
  Outcome outcome = Outcome::ok;
  std::string reason;
  // The objective, higher is better (the caller takes reciprocals of times
  // and memory): one per block, or one per trial.
  std::vector<double> values;
  // Time to target: values' one time was a lower bound (budget or cap).
  bool censored = false;
  std::vector<std::optional<int64_t>> cycles;  // parallel to values, when interleaved
  std::optional<std::string> group;            // interleave group
  std::string machine;
  // Its summary metrics (quality, peak_memory, ...), for the constraints.
  std::map<std::string, double> metrics;
};

struct RaceOptions {
  double alpha = 0.05;
  int max_live = 8;
  // The confirmation runs at least confirm_repeats rounds, then goes on
  // until the winner's interval against the baseline (against the runner-up
  // when the baseline won) is within +-confirm_precision, for at most
  // max_confirm_rounds, or until the budget or `decide` ends it. Its
  // intervals are at kSequentialLevel, as a precision run's are: it stops
  // when an interval is narrow.
  int confirm_repeats = 3;
  double confirm_precision = 0.02;
  int max_confirm_rounds = 30;
  int proposals_per_round = 2;
  uint64_t seed = 0;
  uint64_t baseline = 0;  // its config index
  // Candidates whose intervals against the leader lie within +-this are as
  // good as it: when only such are left, the race ends.
  double equivalence = 0.02;
  // What a winner must meet (see above for how each kind is judged).
  std::vector<Constraint> constraints;
  // Racing on time to target (see above): values are 1 / time, censored.
  bool time_to_target = false;
};

// The confirmation rounds a race on time to target runs at least: the
// fewest whose sign-test interval reaches 95%.
constexpr int kTimeConfirmRounds = 6;

enum class RaceEventKind {
  joined,      // runs from this round on
  dropped,     // shown worse than the leader
  infeasible,  // out of memory, failed, or breaks a constraint
  decided,     // the race ended; the winner goes to confirmation
  retried,     // a transient failure (timeout, crash): it runs again next round
};
const char* event_name(RaceEventKind k);

struct RaceEvent {
  int64_t round = 0;  // the round it happened after (joined: the round it first runs)
  RaceEventKind kind = RaceEventKind::joined;
  uint64_t config = 0;
  std::string reason;                     // in words, with the evidence
  std::optional<RatioEstimate> evidence;  // the candidate over the leader
  std::optional<uint64_t> leader;
};

enum class RacePhase { racing, confirming, done };

struct RaceStatus {
  RacePhase phase = RacePhase::racing;
  int64_t rounds = 0;          // racing rounds completed
  std::vector<uint64_t> live;  // candidates racing after the last look
  std::optional<uint64_t> leader;
  // Each config's estimated level (log objective, the rounds' common drift
  // removed; higher is better), for the configs with an ok trial.
  std::vector<std::pair<uint64_t, double>> levels;
  std::vector<RaceEvent> events;
  std::set<uint64_t> tried;  // every config that has a trial
  std::optional<uint64_t> winner;
  std::optional<uint64_t> runner_up;
  std::string stop;  // why the race ended ("" while racing)
  // The next round's configs and its number (empty when done).
  std::vector<uint64_t> next;
  int64_t next_round = 0;
  // The confirmation rounds' estimates (fresh data only): winner over
  // baseline and over runner-up, at 95%.
  std::optional<RatioEstimate> vs_baseline;
  std::optional<RatioEstimate> vs_runner_up;
  int confirm_rounds = 0;  // confirmation rounds completed
};

// Replays the race over trials and says what comes next. decide: end the
// race now (the budget is spent) and confirm the current leader, or, once
// confirming, end the confirmation when its confirm_repeats rounds are done;
// otherwise the race ends when one candidate is left and the model proposes
// none, and the confirmation when its interval is narrow.
RaceStatus race(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                const RaceOptions& options, bool decide = false);

// What a tune run's trials cost, in seconds: a budget counts their sum, and
// prices the next round and the confirmation config by config, from each
// config's own trials: a batch of 512 costs several times one of 32, and the
// configs that reach the confirmation are often the dearest.
class TrialCosts {
 public:
  // (config, seconds) of every finished trial.
  explicit TrialCosts(const std::vector<std::pair<uint64_t, double>>& trials);
  double spent() const { return spent_; }
  // Config c's mean trial cost; the mean over every trial for a config not run yet.
  double of(uint64_t config) const;
  // Whether budget_s covers the round st plans and then the confirmation:
  // confirm_repeats rounds of the baseline and of two configs each as dear
  // as the dearest of that round (the winner and the runner-up are among
  // its configs).
  bool covers(const RaceStatus& st, const RaceOptions& options, double budget_s) const;
  // Whether budget_s covers the round st plans (a confirmation round).
  bool covers_next(const RaceStatus& st, double budget_s) const;

 private:
  double spent_ = 0;
  size_t count_ = 0;
  std::map<uint64_t, std::pair<double, int>> by_config_;
};

// The race under a budget: as race(), but decided now when budget_s would
// not cover the next round and then the confirmation (TrialCosts::covers),
// and the confirmation ended past its confirm_repeats rounds when budget_s
// would not cover another.
RaceStatus race_within(const TuneSpace& space, const std::vector<RaceTrial>& trials,
                       const RaceOptions& options, const TrialCosts& costs, double budget_s);

// The one-sided confidence of look k's tests with m tests (see above):
// 1 - alpha * 6 / (pi^2 k^2) / m.
double race_level(double alpha, int64_t look, size_t tests);

// The memory rule: config c is ruled out when a config at the same other
// settings with a batch (the memory knob's value, compared as a number, so
// that a list may run in any order) no larger ran out of memory; oom_digits:
// those configs' digits.
bool ruled_out_by_memory(const TuneSpace& space, uint64_t c,
                         const std::vector<std::vector<size_t>>& oom_digits);

// The race's first round: the baseline and every config that changes one
// knob of it (a screening of main effects), at most `limit` of them (then
// the first of each knob's values, round-robin).
std::vector<uint64_t> screening_round(const TuneSpace& space, uint64_t baseline, size_t limit);

}  // namespace gpusweep::host
