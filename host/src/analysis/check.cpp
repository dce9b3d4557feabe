// A check's verdicts; see check.hpp.
#include "analysis/check.hpp"

#include "spec/hashing.hpp"
#include "support/descriptive.hpp"
#include "support/error.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpusweep::host {

CheckOptions check_options(const CheckSpec& check) {
  CheckOptions o;
  o.tolerance = check.tolerance.value_or(o.tolerance);
  o.memory_tolerance = check.memory_tolerance.value_or(o.memory_tolerance);
  o.max_quality_loss = check.max_quality_loss.value_or(o.max_quality_loss);
  if (check.quality_guard) o.quality_guard = parse_quality_guard(*check.quality_guard);
  o.judged_rounds = check.judged_rounds;
  return o;
}

const char* to_string(QualityGuard g) {
  return g == QualityGuard::non_inferiority ? "non-inferiority" : "not-worse";
}

QualityGuard parse_quality_guard(const std::string& text) {
  if (text == "not-worse") return QualityGuard::not_worse;
  if (text == "non-inferiority") return QualityGuard::non_inferiority;
  throw UsageError("--quality-guard " + text + ": give not-worse or non-inferiority");
}

const char* to_string(CheckVerdict v) {
  switch (v) {
    case CheckVerdict::no_regression:
      return "no regression";
    case CheckVerdict::improvement:
      return "improvement";
    case CheckVerdict::inconclusive:
      return "inconclusive";
    case CheckVerdict::regression:
      return "regression";
  }
  return "?";
}

Json without_build(const Json& config) {
  Json c = config;
  if (c.is_object()) c.erase(kBuildKey);
  return c;
}

namespace {

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

// "4.8% slower (interval 4.6% to 5.0% slower)", or across no change "0.9%
// faster (interval 2.0% slower to 3.8% faster)".
std::string change_text(const RatioEstimate& e) {
  std::string out = change_words(e.ratio) + " (interval ";
  if (e.high < 1) return out + percent(1 - e.high) + " to " + percent(1 - e.low) + " slower)";
  if (e.low > 1) return out + percent(e.low - 1) + " to " + percent(e.high - 1) + " faster)";
  return out + change_words(e.low) + " to " + change_words(e.high) + ")";
}

// The interval a pair is judged on: at kSequentialLevel, or (a config
// still open after a finished check was resumed) at its look's spent level.
RatioEstimate judged_interval(const CheckPair& p, const CheckOptions& o) {
  if (o.judged_rounds && !p.precise) return with_level(*p.ratio, separation_level(p.look));
  return *p.ratio;
}

void judge_throughput(CheckPair& p, const CheckOptions& o) {
  const std::string tol = percent(o.tolerance);
  if (p.base->ok == 0 || p.head->ok == 0) {
    if (p.head->ok == 0 && p.base->ok > 0) {
      p.throughput = CheckVerdict::regression;
      p.reason = "every head trial failed (" + p.head->problem + "), base's ran";
    } else {
      p.reason = "no base trial ran ok (" + p.base->problem + "): nothing to compare with";
    }
    return;
  }
  // A verdict needs the process-to-process spread: three repeats paired
  // (one process a side, or failures that left repeats unpaired, give an
  // interval that cannot see it).
  if (!p.ratio || p.ratio->design != RatioDesign::repeats || p.ratio->repeats < kFewRepeats) {
    p.reason = "fewer than " + std::to_string(kFewRepeats) +
               " repeats of both builds paired yet: no verdict";
    if (p.ratio) p.reason = change_text(*p.ratio) + "; " + p.reason;
    return;
  }
  const double threshold = 1 - o.tolerance;
  p.look = static_cast<int>(
      std::max<int64_t>(1, std::max(p.base->trials, p.head->trials) - kFewRepeats + 1));
  p.precise = p.ratio->relative_half_width() <= o.tolerance * kCheckPrecisionShare;
  const RatioEstimate strict = with_level(*p.ratio, separation_level(p.look));
  p.apart = strict.high < threshold || strict.low > threshold;
  const RatioEstimate e = judged_interval(p, o);
  const std::string change = change_text(e);
  if (e.high < threshold) {
    p.throughput = CheckVerdict::regression;
    p.reason = change + ": slower beyond the " + tol + " tolerance";
  } else if (e.low > 1 + o.tolerance) {
    p.throughput = CheckVerdict::improvement;
    p.reason = change + ": faster beyond the " + tol + " tolerance";
  } else if (e.low > threshold) {
    p.throughput = CheckVerdict::no_regression;
    p.reason = change + ": a slowdown beyond " + tol + " ruled out";
  } else {
    p.reason = change + ": not yet sure whether slower beyond the " + tol + " tolerance";
  }
}

// The quality test's one-sided alpha in a check of `pairs` configs: the
// check's, split over its configs (Bonferroni: its verdict is the worst of
// its configs'). Quality is judged once, at a pair's stop, so no look
// spends it. Unsplit, A/A checks called quality worse too often
// (bench/results/2026-11-28-check-real-runs.md).
double quality_alpha(size_t pairs) {
  return (1 - kSequentialLevel) / static_cast<double>(std::max<size_t>(1, pairs));
}

// "12.3%": the share a bound of quality's change (> 0 better) lies from no change.
std::string signed_percent(double change) {
  return (change < 0 ? "-" : "+") + percent(std::abs(change));
}

// The quality part of a pair's verdict line: what the guard ruled out, with
// the bound it reached ("quality: not shown worse; bound -53.0%").
std::string quality_words(const QualityComparison& q, const CheckOptions& o) {
  const std::string bound = std::isnan(q.low) ? "no bound" : "bound " + signed_percent(q.low);
  switch (q.verdict) {
    case QualityVerdict::inferior:
      return "quality " + percent(std::abs(q.change)) + " worse, beyond the margin " +
             percent(o.max_quality_loss) + " (bound " + signed_percent(q.high) + ")";
    case QualityVerdict::non_inferior:
      return "quality: within " + percent(o.max_quality_loss) + " of base's; " + bound;
    case QualityVerdict::inconclusive:
      break;
  }
  return o.quality_guard == QualityGuard::non_inferiority
             ? "quality: not shown within " + percent(o.max_quality_loss) + " of base's; " + bound
             : "quality: not shown worse; " + bound;
}

// Quality samples of the rounds a check judges quality on.
std::vector<QualitySample> judged_quality(const std::vector<QualitySample>& all,
                                          const CheckOptions& o) {
  if (!o.judged_rounds) return all;
  std::vector<QualitySample> out;
  for (const auto& q : all) {
    if (q.repeat < *o.judged_rounds) out.push_back(q);
  }
  return out;
}

void judge_guards(CheckPair& p, const CheckOptions& o, const ConfigSamples& base,
                  const ConfigSamples& head, size_t pairs) {
  const auto base_q = judged_quality(base.quality, o);
  const auto head_q = judged_quality(head.quality, o);
  if (base.higher_is_better && !base_q.empty() && !head_q.empty()) {
    p.quality = compare_quality(base_q, head_q, *base.higher_is_better, o.max_quality_loss,
                                quality_alpha(pairs));
  }
  if (p.quality) {
    p.quality_loss = p.quality->verdict == QualityVerdict::inferior;
    p.quality_open = o.quality_guard == QualityGuard::non_inferiority &&
                     p.quality->verdict == QualityVerdict::inconclusive;
  }
  if (base.peak_memory_bytes && head.peak_memory_bytes && *base.peak_memory_bytes > 0) {
    p.memory_ratio = *head.peak_memory_bytes / *base.peak_memory_bytes;
    p.memory_growth = *p.memory_ratio > 1 + o.memory_tolerance;
  }
  const int64_t head_failed = head.trials - head.ok, base_failed = base.trials - base.ok;
  if (head_failed > 0 && head.ok > 0) {
    // A head that fails where base does not is worse in a way the survivors'
    // throughput cannot show (and its surviving trials may be its faster
    // ones): beyond chance, a regression.
    const double fp = failure_p(head_failed, head.trials, base_failed, base.trials);
    p.head_failing = fp < quality_alpha(pairs);
    p.notes.push_back("head: " + std::to_string(head_failed) + " of " +
                      std::to_string(head.trials) + " trials failed (" + head.problem + "), base " +
                      std::to_string(base_failed) + " of " + std::to_string(base.trials) +
                      "; Fisher p " + fixed(fp, 4) +
                      (p.head_failing ? ", beyond chance"
                                      : ", not beyond chance: judged on the trials that ran"));
  }
  if (!base.problem.empty() && base.ok > 0 && head_failed == 0) {
    p.notes.push_back("base: " + std::to_string(base.trials - base.ok) + " of " +
                      std::to_string(base.trials) + " trials failed (" + base.problem + ")");
  }
}

}  // namespace

std::string change_words(double ratio) {
  return percent(std::abs(ratio - 1)) + (ratio < 1 ? " slower" : " faster");
}

std::vector<CheckPair> check_pairs(const std::vector<ConfigSamples>& configs,
                                   const CheckOptions& options) {
  // Configs by their settings without the build, in the order first seen.
  std::vector<std::string> order;
  std::map<std::string, std::pair<const ConfigSamples*, const ConfigSamples*>> sides;
  for (const auto& c : configs) {
    const std::string key = canonical_json(without_build(c.config));
    const std::string build = c.config.value(kBuildKey, "");
    if (sides.find(key) == sides.end()) order.push_back(key);
    auto& side = sides[key];
    if (build == kBaseBuild) side.first = &c;
    if (build == kHeadBuild) side.second = &c;
  }
  std::vector<CheckPair> out;
  for (const auto& key : order) {
    const auto [base, head] = sides[key];
    if (base == nullptr || head == nullptr) continue;
    CheckPair p;
    p.config = without_build(base->config);
    p.base = base;
    p.head = head;
    p.ratio = estimate_ratio(base->runs, head->runs, kSequentialLevel);
    if (p.ratio && !(p.ratio->ratio > 0)) p.ratio.reset();
    judge_throughput(p, options);
    judge_guards(p, options, *base, *head, order.size());
    p.verdict = p.throughput;
    if (p.quality) p.reason += "; " + quality_words(*p.quality, options);
    std::vector<std::string> also;
    if (p.memory_growth) {
      also.push_back("peak memory " + percent(*p.memory_ratio - 1) + " more, beyond " +
                     percent(options.memory_tolerance));
    }
    if (p.head_failing) also.push_back("head's trials fail more often than base's");
    if (p.quality_loss || !also.empty()) {
      p.verdict = CheckVerdict::regression;
      for (const auto& a : also) p.reason += "; " + a;
    } else if (p.quality_open && p.verdict != CheckVerdict::inconclusive) {
      p.verdict = CheckVerdict::inconclusive;
      p.reason += " (--quality-guard non-inferiority)";
    }
    out.push_back(std::move(p));
  }
  return out;
}

CheckVerdict overall(const std::vector<CheckPair>& pairs) {
  if (pairs.empty()) return CheckVerdict::inconclusive;
  CheckVerdict worst = CheckVerdict::no_regression;
  for (const auto& p : pairs) {
    if (p.verdict == CheckVerdict::regression) return CheckVerdict::regression;
    if (p.verdict == CheckVerdict::inconclusive) worst = CheckVerdict::inconclusive;
  }
  return worst;
}

PrecisionStatus check_status(const std::vector<ConfigSamples>& configs, const CheckOptions& options,
                             const std::set<int64_t>& done_before) {
  PrecisionStatus s;
  s.done = true;
  std::vector<double> widths;
  for (const auto& p : check_pairs(configs, options)) {
    const bool earlier = done_before.count(p.base->config_index) != 0;
    // More rounds of a build whose trials all failed would fail again.
    const bool no_data = p.base->ok == 0 || p.head->ok == 0;
    // Stops on the throughput's two rules and the memory guard only: quality
    // judged at every look would spend its error once a look.
    const bool decided = p.precise || p.apart || p.memory_growth;
    std::optional<double> width;
    if (p.ratio) width = p.ratio->relative_half_width();
    for (const ConfigSamples* side : {p.base, p.head}) {
      ConfigPrecision c;
      c.config_index = side->config_index;
      c.half_width = width;
      c.separated = decided;
      c.no_data = no_data;
      c.earlier = earlier;
      s.done = s.done && c.done();
      s.configs.push_back(c);
    }
    if (width) {
      widths.push_back(*width);
      if (!(earlier || decided || no_data) && !(s.widest_half_width >= *width)) {
        s.widest_half_width = *width;
        s.widest_config = p.head->config_index;
      }
    }
  }
  std::sort(s.configs.begin(), s.configs.end(),
            [](const ConfigPrecision& a, const ConfigPrecision& b) {
              return a.config_index < b.config_index;
            });
  if (!widths.empty()) s.median_half_width = quantile(std::move(widths), 0.5);
  return s;
}

ChangeConfirmation confirm_change(double step_ratio, const CheckPair& p) {
  ChangeConfirmation c;
  const bool repeats =
      p.ratio && p.ratio->design == RatioDesign::repeats && p.ratio->repeats >= kFewRepeats;
  const std::string measured =
      p.ratio ? "the builds re-measured together: " + change_text(*p.ratio) : p.reason;
  const std::string step = "; the step was " + change_words(step_ratio);
  std::string guards;
  if (p.quality_loss) guards += "; apart from throughput, the check's quality guard fired";
  if (p.memory_growth) guards += "; apart from throughput, the check's memory guard fired";
  if (!repeats) {
    c.text = "undecided: " + p.reason + guards;
    return c;
  }
  const RatioEstimate& e = *p.ratio;
  const double half = std::abs(std::log(step_ratio)) / 2;
  if (step_ratio < 1 ? e.high < 1 : e.low > 1) {
    c.call = ConfirmCall::confirmed;
    c.text = "confirmed, the build's: " + measured + step + guards;
  } else if (half > 0 && std::log(e.low) > -half && std::log(e.high) < half) {
    c.call = ConfirmCall::not_the_builds;
    c.text = "not the build's (an environment change, or the machine): " + measured +
             ", within half the step" + step + guards;
  } else {
    c.text = "undecided: " + measured + step + guards;
  }
  return c;
}

double failure_p(int64_t head_failed, int64_t head_trials, int64_t base_failed,
                 int64_t base_trials) {
  // Hypergeometric upper tail: of N trials with F failures, head drew n.
  const int64_t N = head_trials + base_trials, F = head_failed + base_failed, n = head_trials;
  auto log_choose = [](int64_t a, int64_t b) {
    return std::lgamma(static_cast<double>(a) + 1) - std::lgamma(static_cast<double>(b) + 1) -
           std::lgamma(static_cast<double>(a - b) + 1);
  };
  double p = 0;
  for (int64_t k = head_failed; k <= std::min(F, n); ++k) {
    if (F - k > N - n) continue;
    p += std::exp(log_choose(F, k) + log_choose(N - F, n - k) - log_choose(N, n));
  }
  return std::min(1.0, p);
}

std::string check_summary(const PrecisionStatus& s) {
  size_t pairs = 0, done = 0;
  for (const auto& c : s.configs) {
    ++pairs;
    done += c.done();
  }
  std::string out =
      std::to_string(done / 2) + " of " + std::to_string(pairs / 2) + " configs decided";
  if (!std::isnan(s.widest_half_width)) {
    out += "; widest open ±" + fixed(100 * s.widest_half_width, 1) + "% (#" +
           std::to_string(s.widest_config + 1) + ")";
  }
  return out;
}

}  // namespace gpusweep::host
