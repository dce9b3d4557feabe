// The design-based ratio estimate; see ratio_model.hpp.
#include "analysis/ratio_model.hpp"

#include "analysis/significance.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

namespace gpusweep::host {

namespace {

// A mean with the variance of the mean and its degrees of freedom.
struct Mean {
  double mean = 0;
  double var = NAN;
  double df = 0;
};

// The mean of a series whose neighbours may be correlated (the blocks of one
// process drift together): the variance of the mean is inflated by
// (1 + rho) / (1 - rho) for the lag-1 autocorrelation rho (clamped to
// [0, 0.9]), and the degrees of freedom shrink with the effective count.
// spread false: the mean alone (var NaN), where only the mean is used.
Mean series_mean(const std::vector<double>& v, bool spread = true) {
  Mean m;
  const auto n = static_cast<double>(v.size());
  if (v.empty()) return m;
  for (double a : v) m.mean += a / n;
  if (v.size() < 2 || !spread) return m;
  double ss = 0, lag = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    ss += (v[i] - m.mean) * (v[i] - m.mean);
    if (i > 0) lag += (v[i] - m.mean) * (v[i - 1] - m.mean);
  }
  const double rho = ss > 0 && v.size() >= 3 ? std::clamp(lag / ss, 0.0, 0.9) : 0.0;
  const double inflate = (1 + rho) / (1 - rho);
  m.var = ss / (n - 1) / n * inflate;
  m.df = std::max(1.0, n / inflate - 1);
  return m;
}

// The mean of independent values (runs, repeats): s^2 / n, n - 1 df.
Mean independent_mean(const std::vector<double>& v) {
  Mean m = series_mean(v);
  if (v.size() < 2) return m;
  double ss = 0;
  for (double a : v) ss += (a - m.mean) * (a - m.mean);
  const auto n = static_cast<double>(v.size());
  m.var = ss / (n - 1) / n;
  m.df = n - 1;
  return m;
}

// Welch's difference of two means (b - a), with Welch-Satterthwaite df.
Mean difference(const Mean& a, const Mean& b) {
  Mean d;
  d.mean = b.mean - a.mean;
  d.var = a.var + b.var;
  if (!(d.var > 0)) {
    d.df = std::min(a.df, b.df);
    return d;
  }
  d.df = d.var * d.var / (a.var * a.var / a.df + b.var * b.var / b.df);
  return d;
}

using CycleLog = RunIndex::CycleLog;
bool cycle_less(const CycleLog& a, const CycleLog& b) { return a.first < b.first; }

// The contiguous shape's logs in one pass; false (ix.logs partial) when the
// run is of another shape.
bool contiguous_index(const RunSamples& r, RunIndex& ix) {
  if (r.cycles.size() != r.values.size() || r.values.empty() || !r.cycles[0]) return false;
  ix.logs.reserve(r.values.size());
  const int64_t first = *r.cycles[0];
  for (size_t i = 0; i < r.values.size(); ++i) {
    const double v = r.values[i];
    if (!(v > 0) || !std::isfinite(v) || r.cycles[i] != first + static_cast<int64_t>(i)) {
      return false;
    }
    ix.logs.push_back(std::log(v));
    ix.log_sum += ix.logs.back();
  }
  ix.contiguous = true;
  ix.first_cycle = first;
  return true;
}

RunIndex make_index(const RunSamples& r) {
  RunIndex ix;
  if (contiguous_index(r, ix)) return ix;
  ix.logs.clear();
  ix.log_sum = 0;
  ix.logs.reserve(r.values.size());
  ix.cycle_logs.reserve(r.values.size());
  for (size_t i = 0; i < r.values.size(); ++i) {
    const double v = r.values[i];
    if (!(v > 0)) continue;
    const double l = std::log(v);
    if (std::isfinite(v)) ix.logs.push_back(l);
    if (i < r.cycles.size() && r.cycles[i]) ix.cycle_logs.emplace_back(*r.cycles[i], l);
  }
  bool increasing = true;
  for (size_t i = 1; i < ix.cycle_logs.size() && increasing; ++i) {
    increasing = ix.cycle_logs[i - 1].first < ix.cycle_logs[i].first;
  }
  if (increasing) return ix;  // one block a cycle: each mean is its block's log
  // Each cycle's mean as the sum of l / n in block order (the same numbers
  // to the last bit as summing the cycle's logs kept apart): a stable sort
  // by cycle keeps that order within a cycle.
  auto by_cycle = ix.cycle_logs;
  std::stable_sort(by_cycle.begin(), by_cycle.end(), cycle_less);
  for (size_t i = 0; i < by_cycle.size();) {
    size_t j = i;
    while (j < by_cycle.size() && by_cycle[j].first == by_cycle[i].first) ++j;
    const auto n = static_cast<double>(j - i);
    double sum = 0;
    for (size_t k = i; k < j; ++k) sum += by_cycle[k].second / n;
    ix.cycle_means.emplace_back(by_cycle[i].first, sum);
    i = j;
  }
  return ix;
}

// The first of x's per-cycle means whose cycle is not below `cycle`.
size_t first_mean_from(const RunIndex& x, int64_t cycle) {
  size_t lo = 0, hi = x.mean_count();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (x.mean(mid).first < cycle) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// A run's index: its own, or one made now in `made`.
const RunIndex& index_of(const RunSamples& r, RunIndex& made) {
  if (r.index) return *r.index;
  made = make_index(r);
  return made;
}

// One repeat's log ratio: blocks paired by cycle when both trials took
// turns in one group, else the difference of their mean logs. spread false:
// its mean alone (the repeats design uses nothing else).
Mean repeat_difference(const RunSamples& x, const RunSamples& y, int64_t* paired, bool spread) {
  *paired = 0;
  RunIndex xm, ym;
  const RunIndex& xi = index_of(x, xm);
  const RunIndex& yi = index_of(y, ym);
  const bool together = x.group && y.group && *x.group == *y.group;
  if (together && !spread && xi.contiguous && yi.contiguous && xi.first_cycle == yi.first_cycle &&
      xi.logs.size() == yi.logs.size() && xi.logs.size() >= 2) {
    // Every block paired with the same cycle's: the mean of the differences
    // from the sums (the loop below gives it to within rounding).
    *paired = static_cast<int64_t>(yi.logs.size());
    Mean m;
    m.mean = (yi.log_sum - xi.log_sum) / static_cast<double>(yi.logs.size());
    return m;
  }
  if (together && xi.cycle_count() > 0 && yi.cycle_count() > 0) {
    thread_local std::vector<double> series;  // one buffer for every comparison
    series.clear();
    // y's blocks in their order, each with x's mean of its cycle: walked
    // together while y's cycles increase, searched where they go back.
    size_t at = 0;
    const size_t means = xi.mean_count();
    int64_t last = INT64_MIN;
    for (size_t i = 0; i < yi.cycle_count(); ++i) {
      const auto [cycle, l] = yi.cycle_log(i);
      if (cycle < last) at = first_mean_from(xi, cycle);
      if (cycle > last && xi.contiguous) {
        // x's means are its cycles in a row: jump to this one.
        const int64_t k = cycle - xi.first_cycle;
        at = k < 0 ? 0 : std::min(means, static_cast<size_t>(k));
      }
      last = cycle;
      while (at < means && xi.mean(at).first < cycle) ++at;
      if (at == means || xi.mean(at).first != cycle) continue;
      series.push_back(l - xi.mean(at).second);
    }
    if (series.size() >= 2) {
      *paired = static_cast<int64_t>(series.size());
      return series_mean(series, spread);
    }
  }
  return difference(series_mean(xi.logs, spread), series_mean(yi.logs, spread));
}

bool differ(const std::string& a, const std::string& b) {
  return !a.empty() && !b.empty() && a != b;
}

RatioEstimate t_estimate(const Mean& d, double level) {
  RatioEstimate e;
  e.ratio = std::exp(d.mean);
  e.df = d.df;
  e.log_se = std::sqrt(d.var);
  e.p = e.log_se > 0  ? std::min(1.0, 2 * (1 - t_cdf(std::fabs(d.mean) / e.log_se, d.df)))
        : d.mean == 0 ? 1
                      : 0;
  return with_level(e, level);
}

bool has_logs(const RunSamples& r) {
  if (r.index) return !r.index->logs.empty();
  return std::any_of(r.values.begin(), r.values.end(),
                     [](double a) { return a > 0 && std::isfinite(a); });
}

// The first run of each repeat that has values, sorted by repeat (a
// vector, not a map: ablation asks for 60,000 of these on a big run, and
// runs usually come in repeat order already).
using ByRepeat = std::vector<std::pair<int64_t, const RunSamples*>>;
ByRepeat by_repeat(const std::vector<RunSamples>& runs) {
  ByRepeat out;
  out.reserve(runs.size());
  for (const auto& r : runs) {
    if (has_logs(r)) out.emplace_back(r.repeat, &r);
  }
  const auto key_less = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(out.begin(), out.end(), key_less)) {
    std::stable_sort(out.begin(), out.end(), key_less);  // the first of a repeat stays first
  }
  const auto same = [](const auto& a, const auto& b) { return a.first == b.first; };
  out.erase(std::unique(out.begin(), out.end(), same), out.end());
  return out;
}

// The repeats both sides ran: (x's run, y's run) in repeat order.
std::vector<std::pair<const RunSamples*, const RunSamples*>> repeat_pairs(
    const std::vector<RunSamples>& x, const std::vector<RunSamples>& y) {
  const ByRepeat xr = by_repeat(x), yr = by_repeat(y);
  std::vector<std::pair<const RunSamples*, const RunSamples*>> pairs;
  for (size_t i = 0, j = 0; i < xr.size() && j < yr.size();) {
    if (xr[i].first < yr[j].first) {
      ++i;
    } else if (yr[j].first < xr[i].first) {
      ++j;
    } else {
      pairs.emplace_back(xr[i++].second, yr[j++].second);
    }
  }
  return pairs;
}

// Runs whose repeats do not pair: per-run means compared (Welch) when both
// sides have two runs or more, else every value.
std::optional<RatioEstimate> unpaired(const std::vector<RunSamples>& x,
                                      const std::vector<RunSamples>& y, double level) {
  std::vector<double> xm, ym, xa, ya;
  for (const auto* side : {&x, &y}) {
    auto& means = side == &x ? xm : ym;
    auto& all = side == &x ? xa : ya;
    for (const auto& r : *side) {
      RunIndex made;
      const auto& l = index_of(r, made).logs;
      if (l.empty()) continue;
      means.push_back(series_mean(l).mean);
      all.insert(all.end(), l.begin(), l.end());
    }
  }
  Mean d;
  if (xm.size() >= 2 && ym.size() >= 2) {
    d = difference(independent_mean(xm), independent_mean(ym));
  } else if (xa.size() >= 2 && ya.size() >= 2) {
    d = difference(series_mean(xa), series_mean(ya));
  } else {
    return std::nullopt;
  }
  RatioEstimate e = t_estimate(d, level);
  e.design = RatioDesign::unpaired;
  e.repeats = static_cast<int>(std::min(xm.size(), ym.size()));
  for (const auto& a : x) {
    for (const auto& b : y) e.across_machines = e.across_machines || differ(a.machine, b.machine);
  }
  return e;
}

}  // namespace

void index_run(RunSamples& run) { run.index = std::make_shared<const RunIndex>(make_index(run)); }

std::optional<RatioEstimate> estimate_ratio(const std::vector<RunSamples>& x,
                                            const std::vector<RunSamples>& y, double level,
                                            std::map<int64_t, double>* repeat_logs) {
  const auto pairs = repeat_pairs(x, y);
  if (repeat_logs != nullptr) repeat_logs->clear();
  if (pairs.empty()) return unpaired(x, y, level);
  int64_t paired = 0;
  bool across = false;
  std::vector<Mean> diffs;
  for (const auto& [a, b] : pairs) {
    int64_t n = 0;
    // Two repeats or more: the per-repeat means are the observations.
    diffs.push_back(repeat_difference(*a, *b, &n, pairs.size() < 2));
    if (repeat_logs != nullptr)
      repeat_logs->emplace_hint(repeat_logs->end(), a->repeat, diffs.back().mean);
    paired += n;
    across = across || differ(a->machine, b->machine);
  }
  std::optional<RatioEstimate> e;
  if (pairs.size() >= 2) {
    // Process effects are a level of their own: the per-repeat ratios are
    // the observations, whatever their blocks did.
    std::vector<double> d;
    for (const auto& m : diffs) d.push_back(m.mean);
    e = t_estimate(independent_mean(d), level);
    e->design = RatioDesign::repeats;
  } else {
    if (!(diffs[0].var >= 0) || !(diffs[0].df > 0)) return unpaired(x, y, level);
    e = t_estimate(diffs[0], level);
    e->design = RatioDesign::one_process;
  }
  e->repeats = static_cast<int>(pairs.size());
  e->paired_blocks = paired;
  e->across_machines = across;
  return e;
}

std::map<int64_t, double> repeat_log_ratios(const std::vector<RunSamples>& x,
                                            const std::vector<RunSamples>& y) {
  std::map<int64_t, double> out;
  for (const auto& [a, b] : repeat_pairs(x, y)) {
    int64_t paired = 0;
    out.emplace_hint(out.end(), a->repeat, repeat_difference(*a, *b, &paired, false).mean);
  }
  return out;
}

RatioEstimate with_level(RatioEstimate e, double level) {
  if (!(e.log_se > 0)) {
    e.low = e.high = e.ratio;
    return e;
  }
  const double half = t_quantile(0.5 + level / 2, e.df) * e.log_se;
  e.low = e.ratio * std::exp(-half);
  e.high = e.ratio * std::exp(half);
  return e;
}

const char* design_name(RatioDesign d) {
  switch (d) {
    case RatioDesign::repeats:
      return "repeats";
    case RatioDesign::one_process:
      return "one_process";
    case RatioDesign::unpaired:
      return "unpaired";
  }
  return "?";
}

std::string design_note(const RatioEstimate& e) {
  std::string note;
  if (e.design == RatioDesign::one_process) {
    note =
        "one process per config: the interval covers its blocks only, not differences between "
        "processes (memory layout, thread placement); it takes two or more ok repeats of each "
        "(measure.repeats 1, or the other repeats failed or have not run yet)";
  } else if (e.design == RatioDesign::unpaired) {
    note = "repeats do not pair (failed or missing trials): runs compared unpaired";
  }
  if (e.across_machines) {
    note += std::string(note.empty() ? "" : "; ") +
            "compared across machines (their trials ran on different hosts or GPUs)";
  }
  return note;
}

}  // namespace gpusweep::host
