// Quality against the baseline's, with its interval; see quality.hpp.
#include "analysis/quality.hpp"

#include "analysis/significance.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace gpusweep::host {

namespace {

// Degrees of freedom that stand for "known from many samples" (a normal
// quantile): an evaluation's standard error over its episodes or batches.
constexpr double kManyDf = 1e6;

// One side's mean, the variance of that mean and its degrees of freedom.
struct Side {
  double mean = 0;
  double variance = NAN;  // NaN: unknown (one repeat, no standard error)
  double df = kManyDf;
  bool repeats_agree = false;
  bool se_known = false;  // the plugin gave every evaluation's standard error
};

// A one-sided bound's half-width at alpha: t with df degrees of freedom
// (at least 1) times the standard error; 0 for a variance of 0.
double half_width(double variance, double df, double alpha) {
  return variance > 0 ? t_quantile(1 - alpha, std::max(1.0, df)) * std::sqrt(variance) : 0;
}

// The two ways a side's mean is uncertain: the repeats' spread (n - 1
// degrees of freedom) and the evaluations' standard errors (known from many
// samples). The one kept is the one giving the wider one-sided bound at
// alpha, not merely the larger variance: with three repeats t's quantile is
// several times the normal's at a small alpha, so evaluation errors a little
// above the spread, read with the normal's quantile, gave a narrower interval
// than the spread alone (a dqn A/A check was called worse that way).
Side side_of(const std::vector<QualitySample>& samples, double alpha) {
  Side s;
  const auto n = static_cast<double>(samples.size());
  for (const auto& q : samples) s.mean += q.value / n;
  double between = NAN;
  if (samples.size() >= 2) {
    double ss = 0;
    for (const auto& q : samples) ss += (q.value - s.mean) * (q.value - s.mean);
    between = ss / (n - 1) / n;
    s.repeats_agree = ss == 0;
  }
  const bool all_se = std::all_of(samples.begin(), samples.end(),
                                  [](const QualitySample& q) { return std::isfinite(q.se); });
  s.se_known = all_se;
  double evaluation = NAN;
  if (all_se) {
    evaluation = 0;
    for (const auto& q : samples) evaluation += q.se * q.se / (n * n);
  }
  if (std::isfinite(between) &&
      !(std::isfinite(evaluation) &&
        half_width(evaluation, kManyDf, alpha) > half_width(between, n - 1, alpha))) {
    s.variance = between;
    s.df = n - 1;
  } else if (std::isfinite(evaluation)) {
    s.variance = evaluation;
  }
  return s;
}

// The change's one-sided bounds at +-half, and the verdict they give.
QualityComparison with_bounds(QualityComparison q, double half, double margin) {
  q.low = q.change - half;
  q.high = q.change + half;
  q.verdict = q.low >= -margin   ? QualityVerdict::non_inferior
              : q.high < -margin ? QualityVerdict::inferior
                                 : QualityVerdict::inconclusive;
  return q;
}

// The config's difference from the baseline, paired by repeat, as a Side
// (mean: config - baseline): when both ran the same repeats, two or more,
// every sample's repeat known; nothing otherwise.
std::optional<Side> paired_difference(const std::vector<QualitySample>& baseline,
                                      const std::vector<QualitySample>& config, double alpha) {
  std::map<int64_t, const QualitySample*> b;
  for (const auto& q : baseline) {
    if (q.repeat < 0 || !b.emplace(q.repeat, &q).second) return std::nullopt;
  }
  if (b.size() < 2 || config.size() != b.size()) return std::nullopt;
  std::vector<QualitySample> d;  // each repeat's difference, with its evaluation error
  std::set<int64_t> seen;
  for (const auto& q : config) {
    auto it = b.find(q.repeat);
    if (it == b.end() || !seen.insert(q.repeat).second) return std::nullopt;
    d.push_back({q.value - it->second->value, std::hypot(q.se, it->second->se), q.repeat});
  }
  return side_of(d, alpha);
}

}  // namespace

std::string to_string(QualityVerdict v) {
  switch (v) {
    case QualityVerdict::non_inferior:
      return "non-inferior";
    case QualityVerdict::inferior:
      return "inferior";
    case QualityVerdict::inconclusive:
      return "inconclusive";
  }
  return "?";
}

std::optional<QualityComparison> compare_quality(const std::vector<QualitySample>& baseline,
                                                 const std::vector<QualitySample>& config,
                                                 bool higher_is_better, double margin,
                                                 double alpha) {
  if (baseline.empty() || config.empty()) return std::nullopt;
  const Side b = side_of(baseline, alpha);
  const Side c = side_of(config, alpha);
  if (b.mean == 0 || !std::isfinite(b.mean) || !std::isfinite(c.mean)) return std::nullopt;
  const double scale = std::fabs(b.mean);
  QualityComparison q;
  q.change = (higher_is_better ? 1.0 : -1.0) * (c.mean - b.mean) / scale;
  if (const auto d = paired_difference(baseline, config, alpha)) {
    // The same repeats on both sides: their paired differences (the same
    // mean difference, a variance without what a repeat's seed shares).
    if (!std::isfinite(d->variance)) {
      q.note = "no standard error from the plugin: no interval, so no verdict";
      return q;
    }
    if (d->variance == 0 && !d->se_known) {
      q.note =
          "repeats agree exactly with the baseline's (the same seed, a deterministic run): the "
          "interval has no width and says nothing of other seeds";
    }
    return with_bounds(q, half_width(d->variance, d->df, alpha) / scale, margin);
  }
  if (!std::isfinite(b.variance) || !std::isfinite(c.variance)) {
    q.note = "one repeat and no standard error from the plugin: no interval, so no verdict";
    return q;
  }
  const double variance = b.variance + c.variance;
  if (variance == 0 && b.repeats_agree && c.repeats_agree && !(b.se_known && c.se_known)) {
    q.note =
        "repeats agree exactly (the same seed, a deterministic run): the interval has no "
        "width and says nothing of other seeds";
  }
  // Welch-Satterthwaite over the two sides' variances.
  const double df = variance > 0 ? welch_df({{b.variance, b.df}, {c.variance, c.df}}) : 1;
  return with_bounds(q, half_width(variance, df, alpha) / scale, margin);
}

}  // namespace gpusweep::host
