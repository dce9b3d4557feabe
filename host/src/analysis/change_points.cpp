// Otava's E-divisive means with a t-test and a minimum segment length; see
// change_points.hpp.
#include "analysis/change_points.hpp"

#include "analysis/significance.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpusweep::host {

namespace {

// Half-open [begin, end) of the series.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
};

struct Candidate {
  std::size_t index = 0;
  double qhat = 0;
};

// Student's t-test (pooled variance, as Otava's) between [begin, split) and
// [split, end).
ChangePoint t_test(const std::vector<SeriesPoint>& x, std::size_t begin, std::size_t split,
                   std::size_t end) {
  auto mean = [&](std::size_t a, std::size_t b) {
    double s = 0;
    for (std::size_t i = a; i < b; ++i) s += x[i].log_value;
    return s / static_cast<double>(b - a);
  };
  ChangePoint cp;
  cp.index = split;
  cp.before = mean(begin, split);
  cp.after = mean(split, end);
  cp.ratio = std::exp(cp.after - cp.before);
  double squares = 0, errors = 0;
  for (std::size_t i = begin; i < end; ++i) {
    const double d = x[i].log_value - (i < split ? cp.before : cp.after);
    squares += d * d;
    errors += x[i].std_error * x[i].std_error;
  }
  const double n1 = static_cast<double>(split - begin), n2 = static_cast<double>(end - split);
  const double df = n1 + n2 - 2;
  if (df < 1) return cp;
  const double pooled = std::max(squares / df, errors / (n1 + n2));
  const double diff = cp.after - cp.before;
  if (pooled <= 0) {
    cp.p_value = diff == 0 ? 1 : 0;
    return cp;
  }
  const double t = diff / std::sqrt(pooled * (1 / n1 + 1 / n2));
  cp.p_value = std::min(1.0, 2 * t_cdf(-std::fabs(t), df));
  return cp;
}

// E-divisive's proposal within one window: pairwise distances |x_i - x_j|
// (power 1) and, per column, their running sums, so that each Q(tau, kappa)
// costs O(1) and a segment's best split O(length^2).
class Divisive {
 public:
  Divisive(const std::vector<SeriesPoint>& x, Span window) : first_(window.begin) {
    const std::size_t n = window.end - window.begin;
    column_sums_.assign(n, std::vector<double>(n + 1, 0));
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t i = 0; i < n; ++i) {
        const double d = std::fabs(x[first_ + i].log_value - x[first_ + j].log_value);
        column_sums_[j][i + 1] = column_sums_[j][i] + d;
      }
    }
  }

  // The split of seg maximising Q over tau (the split) and kappa (how far
  // the right side reaches), both sides at least min_segment long.
  Candidate best_split(Span seg, std::size_t min_segment) const {
    Candidate best{0, -INFINITY};
    const std::size_t s = seg.begin - first_, e = seg.end - first_;
    double within_left = 0;  // sum over pairs in [s, tau)
    for (std::size_t tau = s + 1; tau + min_segment <= e; ++tau) {
      within_left += sum(s, tau - 1, tau - 1);
      if (tau - s < min_segment) continue;
      double cross = 0, within_right = 0;
      const double n = static_cast<double>(tau - s);
      for (std::size_t kappa = tau + 1; kappa <= e; ++kappa) {
        cross += sum(s, tau, kappa - 1);
        within_right += sum(tau, kappa - 1, kappa - 1);
        if (kappa - tau < min_segment) continue;
        const double m = static_cast<double>(kappa - tau);
        double q = 2 / (m + n) * cross;
        if (n > 1) q -= 2 * m / ((m + n) * (n - 1)) * within_left;
        if (m > 1) q -= 2 * n / ((m + n) * (m - 1)) * within_right;
        if (q > best.qhat) best = {first_ + tau, q};
      }
    }
    return best;
  }

 private:
  // Sum of |x_i - x_column| over i in [a, b), window-relative.
  double sum(std::size_t a, std::size_t b, std::size_t column) const {
    return column_sums_[column][b] - column_sums_[column][a];
  }

  std::size_t first_;
  std::vector<std::vector<double>> column_sums_;
};

// The segments that the sorted points cut span into.
std::vector<Span> segments(const std::vector<ChangePoint>& points, Span span) {
  std::vector<Span> out;
  std::size_t begin = span.begin;
  for (const ChangePoint& p : points) {
    out.push_back({begin, p.index});
    begin = p.index;
  }
  out.push_back({begin, span.end});
  return out;
}

// Otava's detector on one window: split the segment whose best split has the
// largest Q while that split's t-test passes max_p.
std::vector<ChangePoint> detect_in_window(const std::vector<SeriesPoint>& x, Span window,
                                          const ChangePointOptions& o, double max_p) {
  const Divisive divisive(x, window);
  std::vector<ChangePoint> found;
  for (;;) {
    Candidate best{0, -INFINITY};
    Span where;
    for (const Span& seg : segments(found, window)) {
      if (seg.end - seg.begin < 2 * o.min_segment) continue;
      const Candidate c = divisive.best_split(seg, o.min_segment);
      if (c.qhat > best.qhat) {
        best = c;
        where = seg;
      }
    }
    if (best.qhat == -INFINITY) break;
    ChangePoint cp = t_test(x, where.begin, best.index, where.end);
    cp.qhat = best.qhat;
    if (cp.p_value > max_p) break;
    found.insert(std::upper_bound(found.begin(), found.end(), cp.index,
                                  [](std::size_t i, const ChangePoint& p) { return i < p.index; }),
                 cp);
  }
  return found;
}

// Each point's t-test against its neighbours' segments over the whole series.
void retest(const std::vector<SeriesPoint>& x, std::vector<ChangePoint>& points) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::size_t begin = i == 0 ? 0 : points[i - 1].index;
    const std::size_t end = i + 1 == points.size() ? x.size() : points[i + 1].index;
    const double qhat = points[i].qhat;
    points[i] = t_test(x, begin, points[i].index, end);
    points[i].qhat = qhat;
  }
}

double magnitude(const ChangePoint& p) { return std::expm1(std::fabs(p.after - p.before)); }

// The point to drop next, or points.size() when all stand: first any that
// bounds a segment shorter than min_segment (the weaker of its two), then
// Otava's rule: the largest p-value if it fails max_p, else the smallest
// change if it is under min_magnitude.
std::size_t weakest(const std::vector<ChangePoint>& points, std::size_t length,
                    const ChangePointOptions& o) {
  const std::size_t none = points.size();
  for (std::size_t i = 0; i <= points.size(); ++i) {
    const std::size_t begin = i == 0 ? 0 : points[i - 1].index;
    const std::size_t end = i == points.size() ? length : points[i].index;
    if (end - begin >= o.min_segment) continue;
    if (i == 0) return 0;
    if (i == points.size()) return i - 1;
    return points[i - 1].p_value >= points[i].p_value ? i - 1 : i;
  }
  if (points.empty()) return none;
  auto by_p = [](const ChangePoint& a, const ChangePoint& b) { return a.p_value < b.p_value; };
  const auto worst = std::max_element(points.begin(), points.end(), by_p);
  if (worst->p_value >= o.max_p) return static_cast<std::size_t>(worst - points.begin());
  auto by_size = [](const ChangePoint& a, const ChangePoint& b) {
    return magnitude(a) < magnitude(b);
  };
  const auto smallest = std::min_element(points.begin(), points.end(), by_size);
  if (magnitude(*smallest) <= o.min_magnitude && o.min_magnitude > 0) {
    return static_cast<std::size_t>(smallest - points.begin());
  }
  return none;
}

}  // namespace

std::vector<ChangePoint> find_change_points(const std::vector<SeriesPoint>& series,
                                            const ChangePointOptions& o) {
  if (o.min_segment < 1) throw std::invalid_argument("change points: min_segment must be >= 1");
  if (o.window < 2 * o.min_segment) {
    throw std::invalid_argument("change points: window must hold two minimum segments");
  }
  if (!(o.max_p > 0 && o.max_p < 1)) {
    throw std::invalid_argument("change points: max_p must lie in (0, 1)");
  }
  for (const SeriesPoint& p : series) {
    if (!std::isfinite(p.log_value) || !std::isfinite(p.std_error) || p.std_error < 0) {
      throw std::invalid_argument("change points: a point's value or error is not finite");
    }
  }
  // Split: windows overlapping by half, each searched at a relaxed level
  // (Otava's first pass: 10x max_p below 0.05), the next window starting at
  // the last point found when that lies beyond the half.
  const double first_pass = o.max_p < 0.05 ? o.max_p * 10 : o.max_p < 0.5 ? o.max_p * 2 : o.max_p;
  const std::size_t n = series.size(), step = o.window / 2;
  std::vector<ChangePoint> points;
  for (std::size_t start = 0; start < n;) {
    const Span window{start, std::min(start + o.window, n)};
    const std::vector<ChangePoint> found = detect_in_window(series, window, o, first_pass);
    for (const ChangePoint& p : found) {
      const bool known = std::any_of(points.begin(), points.end(),
                                     [&](const ChangePoint& q) { return q.index == p.index; });
      if (!known) points.push_back(p);
    }
    start = std::max(found.empty() ? 0 : found.back().index, start + step);
  }
  std::sort(points.begin(), points.end(),
            [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  // Merge: drop the weakest and re-test its neighbours until all stand.
  retest(series, points);
  for (std::size_t w; (w = weakest(points, n, o)) < points.size();) {
    points.erase(points.begin() + static_cast<std::ptrdiff_t>(w));
    retest(series, points);
  }
  return points;
}

}  // namespace gpusweep::host
