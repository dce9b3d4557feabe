// `gpusweep check`: two builds of one workload (base and head) measured in
// one run, each config of the sweep under both, and a verdict per config
// that CI can gate on.
//
// A check is a sweep with one more grid axis, the host's own setting
// `build` ("base", "head"): the two builds of a config take turns block by
// block with every other config, so each config's head/base throughput
// ratio is paired within cycles and repeats as any ratio of a run is
// (ratio_model.hpp).
//
// The rule, for the ratio r = head / base throughput, its interval I at
// kSequentialLevel and the tolerance t: the interval against the threshold.
//   regression     I lies wholly below 1 - t: slower by more than t, surely
//   improvement    I lies wholly above 1 + t
//   no regression  I's low end is above 1 - t: a slowdown beyond t ruled out
//   inconclusive   I straddles 1 - t (more rounds, or the budget ended), or
//                  fewer than 3 repeats of both builds are paired yet
// Rounds stop per config on evidence that keeps that rule's error where the
// docs state it, however often the check looks (precision.hpp's two rules):
//   precise  I's half-width is at most t * kCheckPrecisionShare: a stop that
//            depends on the spread alone, judged once there at
//            kSequentialLevel;
//   apart    the interval at look k's spent separation_level(k) lies wholly
//            on one side of 1 - t (or above 1 + t): the looks share one
//            error budget, kSeparationAlpha.
// A config still open when the budget or the round cap ends is judged once
// there, at kSequentialLevel. Why these rules and their measured error:
// docs/check.md.
//
// The guards judge once, at the pair's stop, never stopping it themselves:
// quality (compare's test, its alpha split over the configs) under
// QualityGuard's rule, and peak memory (head's largest over base's beyond
// memory_tolerance) turn any verdict into a regression.
#pragma once

#include "analysis/compare.hpp"
#include "analysis/precision.hpp"
#include "spec/check_spec.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host {

// The default throughput tolerance (a ratio's distance from 1), from
// bench/results/2026-11-28-check-simulated.md (docs/check.md, "Why 3%").
constexpr double kDefaultCheckTolerance = 0.03;
constexpr double kDefaultMemoryTolerance = 0.10;
// Seconds of measuring before a check calls its undecided configs
// inconclusive: about 20 rounds of the quickstart's 8 trials.
constexpr double kDefaultCheckBudgetS = 300;

// A config's rounds stop once its interval's half-width is at most this
// share of the tolerance: at 3%, +-1%, well inside the room between 1 and
// 1 - t, so an A/A config that stops there passes.
constexpr double kCheckPrecisionShare = 1.0 / 3;

// What the quality guard rules out before a config passes.
//   not_worse        a regression only when head's quality is shown worse
//                    than base's beyond the margin; quality too uncertain to
//                    tell passes, its bound printed (an inferiority test:
//                    the default, for noisy metrics such as RL returns)
//   non_inferiority  head must be shown within the margin: quality too
//                    uncertain to tell makes the config inconclusive
enum class QualityGuard { not_worse, non_inferiority };
const char* to_string(QualityGuard g);
// "not-worse" or "non-inferiority" (the spellings of --quality-guard).
QualityGuard parse_quality_guard(const std::string& text);

struct CheckOptions {
  double tolerance = kDefaultCheckTolerance;
  double memory_tolerance = kDefaultMemoryTolerance;
  double max_quality_loss = kDefaultMaxQualityLoss;  // relative, as compare's
  QualityGuard quality_guard = QualityGuard::not_worse;
  // Set once a finished check is resumed: the rounds it had run when it
  // first finished. Its one judgement of open configs at the budget's end
  // was spent there, so later rounds decide a config only by the two
  // stopping rules, and quality is judged on the first finish's rounds.
  std::optional<int64_t> judged_rounds;
};

// A check's settings as its stored record carries them; defaults for what
// it leaves out.
CheckOptions check_options(const CheckSpec& check);

enum class CheckVerdict { no_regression, improvement, inconclusive, regression };
const char* to_string(CheckVerdict v);

struct CheckPair {
  Json config;  // the config without its build
  const ConfigSamples* base = nullptr;
  const ConfigSamples* head = nullptr;
  std::optional<RatioEstimate> ratio;  // head over base, at kSequentialLevel
  std::optional<QualityComparison> quality;
  std::optional<double> memory_ratio;  // head's peak memory over base's
  CheckVerdict throughput = CheckVerdict::inconclusive;
  bool quality_loss = false;   // head's quality shown worse than base's beyond the margin
  bool quality_open = false;   // non_inferiority: quality not shown within the margin
  bool memory_growth = false;  // head's peak memory beyond memory_tolerance
  bool head_failing = false;   // head's trials fail more often than base's, beyond chance
  // The stopping rules at this pair's look (check.hpp's preface): its
  // interval is precise, or lies apart from 1 - t at the spent level.
  bool precise = false;
  bool apart = false;
  int look = 0;  // 1 at the first look (kFewRepeats trials a side), then one a round
  CheckVerdict verdict = CheckVerdict::inconclusive;
  // One line: why this verdict ("5.1% slower, 3.2% to 7.0%: beyond the 2.0%
  // tolerance"), and what else a reader must know (failed trials, quality).
  std::string reason;
  std::vector<std::string> notes;
};

// A ratio's change in words: "4.8% slower", "0.9% faster".
std::string change_words(double ratio);

// The pairs of a check's configs (as gather_configs returns them), in config
// order. A config present under one build only (the other's trials are not
// planned yet) is left out.
std::vector<CheckPair> check_pairs(const std::vector<ConfigSamples>& configs,
                                   const CheckOptions& options);

// The worst verdict of the pairs (regression over inconclusive over the
// rest); inconclusive when there are none: a gate passes nothing compared.
CheckVerdict overall(const std::vector<CheckPair>& pairs);

// A look of a check's rounds (SweepRun): a pair is done once it is precise,
// apart, has no data to come, or its memory guard fired; both of its
// configs are then done. Nothing is a baseline.
PrecisionStatus check_status(const std::vector<ConfigSamples>& configs, const CheckOptions& options,
                             const std::set<int64_t>& done_before = {});

// What a check of a history change point's two builds (the one before the
// step, the one at it) says of that step (`history --confirm`). Judged on the
// throughput's interval against the step's own size, not the CI tolerance:
//   confirmed       the interval excludes 1 on the step's side: the build's
//   not_the_builds  the interval lies within half the step of 1 (in log
//                   terms): the builds measure alike, so the step came from
//                   the environment or the machine
//   undecided       neither (the interval is too wide to tell)
// The check's guards (quality, memory) are reported apart: they say nothing
// of a throughput step.
enum class ConfirmCall { confirmed, not_the_builds, undecided };
struct ChangeConfirmation {
  ConfirmCall call = ConfirmCall::undecided;
  std::string text;  // "confirmed, the build's: the builds re-measured together: ..."
};
ChangeConfirmation confirm_change(double step_ratio, const CheckPair& p);

// The one-sided p of Fisher's exact test that head's trials fail more often
// than base's: P(head fails >= head_failed of head_trials) when the failures
// fall at random over both builds' trials.
double failure_p(int64_t head_failed, int64_t head_trials, int64_t base_failed,
                 int64_t base_trials);

// "2 of 4 configs decided; widest open ±1.8% (#3)" for progress lines.
std::string check_summary(const PrecisionStatus& s);

// The config without its build key.
Json without_build(const Json& config);

}  // namespace gpusweep::host
