// Time to quality compared with censoring (measure.target): each trial
// trained until an evaluation reached the target (its time known), its
// budget ended or an adaptive cap stopped it (censored: its time is a lower
// bound), or it diverged (a NaN metric: it never reaches the target, its
// time is +infinity whatever it had trained).
//
// Per config, the median time from order statistics, valid whatever the
// censoring (a cap set by another config's time on the same seed is
// informative censoring, under which Kaplan-Meier runs high): the median
// lies between the median of the lower bounds (censored trials at their
// time) and the median with censored trials as +infinity. One number when
// the two coincide (always under a common budget with no divergence, where
// it equals Kaplan-Meier's); "beyond" when over half never reached it, then
// known only to exceed the lower end. A distribution-free interval from
// order statistics (the binomial's: x_(k) to x_(n-k+1)), the censored taken
// as their lower bounds on one side and as unbounded on the other, so that
// censoring only widens it.
//
// Against the baseline, paired by seed (repeat r of both trained from the
// same seed): the median of the per-seed ratios, with the sign test's
// interval over those ratios. A pair with a censored side gives only a
// bound on its ratio (the config censored: at least its budget over the
// baseline's time; both censored: nothing; the config diverged: +infinity,
// known slower), and the interval takes each bound on the side that widens
// it, so it keeps its level whatever the censoring, and assumes no
// distribution. It needs enough seeds: with n pairs the widest interval it
// can give is x_(1) to x_(n), of level 1 - 2^(1-n) (6 seeds for 95%).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

struct TargetTime {
  int64_t repeat = 0;
  double time_s = 0;  // to the target, or the training time when censored
  bool censored = false;
  bool diverged = false;  // never reaches it (censored too): its time is +infinity
  std::string machine;    // where it ran (compare's machine key; "" when unknown)
};

struct TimeSummary {
  int n = 0;
  int reached = 0;
  int diverged = 0;
  // The median with censored trials as +infinity (the upper end of what the
  // data allow); nothing when over half never reached the target (beyond).
  // What `best` and first_to_target rank by.
  std::optional<double> median;
  // The median with censored trials at their lower bounds (diverged ones
  // +infinity): the lower end; "> median_low" when median is nothing.
  double median_low = 0;
  double low = 0;         // interval at the requested level; high infinite
  double high = 0;        // when the data cannot bound it
  double budget = 0;      // the largest censored time of a trial that did not diverge (0: none)
  bool interval = false;  // false: too few trials for an interval at this level
  // MLPerf's score: the mean after dropping the fastest and the slowest
  // trial, valid when at most one trial never reached the target (it is
  // then the slowest, dropped) and there are at least 5; nothing otherwise.
  std::optional<double> olympic_mean;
};

TimeSummary summarise_times(const std::vector<TargetTime>& times, double level = 0.95);

// The median as printed: "12.3 s"; "12.3 s to 14.1 s" where censored trials
// leave it between two ends; "> 9.00 s" when over half never reached it (the
// lower end); "never (6 of 10 diverged)" when that lower end is infinite.
std::string median_text(const TimeSummary& s);

// The order statistic k (1-based) whose pair x_(k), x_(n-k+1) is the
// sign test's interval for a median at `level` from n values: the largest k
// with 2 P(B <= k - 1) <= 1 - level, B ~ Binomial(n, 1/2); 0 when even
// x_(1), x_(n) fall short.
int sign_test_rank(int n, double level);

struct TimeRatio {
  int pairs = 0;     // seeds both sides ran
  int known = 0;     // of which both reached the target (an exact ratio)
  double ratio = 1;  // median of the per-seed ratios (bounds where censored)
  double low = 0;    // interval; 0 or infinite on a side the data cannot bound
  double high = 0;
  bool interval = false;  // false: too few pairs for an interval at this level
  std::string note;       // what bounds it, when anything
};

// config over baseline (> 1: the config takes longer to reach the target);
// nothing when no seed pairs.
std::optional<TimeRatio> paired_time_ratio(const std::vector<TargetTime>& baseline,
                                           const std::vector<TargetTime>& config,
                                           double level = 0.95);

// The drop test for a race on time to target (tune --objective
// time_to_target, not wired yet): a one-sided paired sign test of
// "candidate slower than leader" over the seeds (repeats) both ran. A seed
// counts as slower only when it is known to be: both reached the target and
// the candidate took longer, or the candidate was censored (its budget or
// an adaptive cap) at or past the leader's time; every other seed (the
// leader censored, both censored, a tie) counts against it. Censoring can
// only lower the count, so under "the candidate is not slower" (on each
// seed at most an even chance of being slower, seeds independent) the
// p-value keeps P(p <= a) <= a whatever the times' distribution and however
// much is censored. p: P(Binomial(pairs, 1/2) >= slower).
struct SignTest {
  int pairs = 0;
  int slower = 0;
  double p = 1;
};
SignTest slower_by_sign(const std::vector<TargetTime>& leader,
                        const std::vector<TargetTime>& candidate);

}  // namespace gpusweep::host
