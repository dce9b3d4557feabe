// A check's verdicts; see check.hpp.
#include "analysis/check.hpp"

#include "spec/hashing.hpp"
#include "support/format.hpp"
#include "support/stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpusweep::host {

CheckOptions check_options(const Json& check) {
  CheckOptions o;
  if (!check.is_object()) return o;
  o.tolerance = check.value("tolerance", o.tolerance);
  o.memory_tolerance = check.value("memory_tolerance", o.memory_tolerance);
  o.max_quality_loss = check.value("max_quality_loss", o.max_quality_loss);
  return o;
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
  const RatioEstimate& e = *p.ratio;
  const std::string change = change_text(e);
  if (e.high < 1 - o.tolerance) {
    p.throughput = CheckVerdict::regression;
    p.reason = change + ": slower beyond the " + tol + " tolerance";
  } else if (e.low > 1 + o.tolerance) {
    p.throughput = CheckVerdict::improvement;
    p.reason = change + ": faster beyond the " + tol + " tolerance";
  } else if (e.low > 1 - o.tolerance) {
    p.throughput = CheckVerdict::no_regression;
    p.reason = change + ": a slowdown beyond " + tol + " ruled out";
  } else {
    p.reason = change + ": not yet sure whether slower beyond the " + tol + " tolerance";
  }
}

// The quality test's one-sided alpha in a check of `pairs` configs: the
// sequential level's miss rate for the check, not for each config
// (Bonferroni: its verdict is the worst of its configs'), since it is judged
// after every round. At 5% a config, dqn A/A checks of the quickstart's 4
// configs called quality worse in 3 of 16
// (bench/results/2026-11-28-check-real-runs.md).
double quality_alpha(size_t pairs) {
  return (1 - kSequentialLevel) / static_cast<double>(std::max<size_t>(1, pairs));
}

void judge_guards(CheckPair& p, const CheckOptions& o, const ConfigSamples& base,
                  const ConfigSamples& head, size_t pairs) {
  if (base.higher_is_better && !base.quality.empty() && !head.quality.empty()) {
    p.quality = compare_quality(base.quality, head.quality, *base.higher_is_better,
                                o.max_quality_loss, quality_alpha(pairs));
  }
  if (p.quality) {
    if (p.quality->verdict == QualityVerdict::inferior) {
      p.quality_loss = true;
    } else if (p.quality->verdict == QualityVerdict::inconclusive) {
      p.notes.push_back("quality not shown within " + percent(o.max_quality_loss) + " of base's");
    }
  }
  if (base.peak_memory_bytes && head.peak_memory_bytes && *base.peak_memory_bytes > 0) {
    p.memory_ratio = *head.peak_memory_bytes / *base.peak_memory_bytes;
    p.memory_growth = *p.memory_ratio > 1 + o.memory_tolerance;
  }
  if (!head.problem.empty() && head.ok > 0) {
    p.notes.push_back("head: " + std::to_string(head.trials - head.ok) + " of " +
                      std::to_string(head.trials) + " trials failed (" + head.problem + ")");
  }
  if (!base.problem.empty() && base.ok > 0) {
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
    std::vector<std::string> also;
    if (p.quality_loss) {
      also.push_back("quality " + percent(std::abs(p.quality->change)) +
                     " worse, beyond the margin " + percent(options.max_quality_loss));
    }
    if (p.memory_growth) {
      also.push_back("peak memory " + percent(*p.memory_ratio - 1) + " more, beyond " +
                     percent(options.memory_tolerance));
    }
    if (!also.empty()) {
      p.verdict = CheckVerdict::regression;
      for (const auto& a : also) p.reason += "; " + a;
    }
    out.push_back(std::move(p));
  }
  return out;
}

CheckVerdict overall(const std::vector<CheckPair>& pairs) {
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
    const bool decided = p.verdict != CheckVerdict::inconclusive;
    std::optional<double> width;
    if (p.ratio) width = (p.ratio->high - p.ratio->low) / 2 / p.ratio->ratio;
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
