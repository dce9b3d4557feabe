// What the race tries: the model of the knobs' effects and its proposals
// (race_internal.hpp), the memory rule (ruled_out_by_memory) and the first
// round's screening (screening_round).
#include "analysis/race_internal.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace gpusweep::host {

namespace detail {

namespace {

// A proposal joins when the model predicts it better than the leader by at
// least this (log): configs it predicts as fast as the leader would keep a
// plateau's race going for ever.
constexpr double kProposalGain = 0.005;
// A knob's value no ok trial has had yet is predicted as good as the best
// value of that knob so far, plus this: unknown, so worth a try.
constexpr double kUnseenBonus = 0.03;
// The model's ridge penalties: main effects are shrunk a little,
// interactions (seldom seen together early on) more.
constexpr double kRidgeMain = 0.05;
constexpr double kRidgePair = 0.5;
// Spaces up to this size are scored config by config; larger ones by a
// sample and the neighbours of the best.
constexpr uint64_t kEnumerate = 50000;
constexpr size_t kSample = 20000;

// Main effects and pairwise interactions of the knobs, by ridge regression
// of the configs' levels on indicator features.
class KnobModel {
 public:
  // failed: the configs that failed (not out of memory): a value that only
  // ever failed, twice or more, is not worth another try.
  KnobModel(const TuneSpace& space, const std::map<uint64_t, double>& levels,
            const std::vector<std::vector<size_t>>& failed)
      : space_(space) {
    for (size_t k = 0; k < space.knobs(); ++k) {
      for (size_t j = 1; j < space.levels(k).size(); ++j) main_.push_back({k, j});
    }
    for (size_t a = 0; a < main_.size(); ++a) {
      for (size_t b = a + 1; b < main_.size(); ++b) {
        if (main_[a].first != main_[b].first) pairs_.push_back({a, b});
      }
    }
    const size_t p = 1 + main_.size() + pairs_.size();
    std::vector<double> xtx(p * p, 0), xty(p, 0);
    for (const auto& [c, y] : levels) {
      const auto f = features(c);
      for (size_t i : f) {
        xty[i] += y;
        for (size_t j : f) xtx[i * p + j] += 1;
      }
    }
    for (size_t i = 1; i < p; ++i) xtx[i * p + i] += i <= main_.size() ? kRidgeMain : kRidgePair;
    beta_ = solve(xtx, xty, p);
    // A level no ok trial has had (it ran out of memory where it was tried,
    // say) is unknown, not bad: it gets the best effect its knob has shown
    // and a bonus, so that it is tried where it may fit; unless it failed
    // twice or more (a library that cannot run it here).
    std::vector<double> best(space.knobs(), 0);
    for (size_t i = 0; i < main_.size(); ++i) {
      if (xtx[(1 + i) * p + (1 + i)] > kRidgeMain) {
        best[main_[i].first] = std::max(best[main_[i].first], beta_[1 + i]);
      }
    }
    for (size_t i = 0; i < main_.size(); ++i) {
      if (xtx[(1 + i) * p + (1 + i)] <= kRidgeMain) {
        size_t failures = 0;
        for (const auto& d : failed) failures += d[main_[i].first] == main_[i].second;
        beta_[1 + i] = failures >= 2 ? -1.0 : best[main_[i].first] + kUnseenBonus;
      }
    }
  }

  double predict(uint64_t c) const {
    double y = 0;
    for (size_t i : features(c)) y += beta_[i];
    return y;
  }

 private:
  // The indices of the features that are 1 for config c (0: the intercept).
  std::vector<size_t> features(uint64_t c) const {
    const auto d = space_.digits(c);
    std::vector<size_t> on = {0};
    std::vector<size_t> mains;
    for (size_t i = 0; i < main_.size(); ++i) {
      if (d[main_[i].first] == main_[i].second) mains.push_back(i);
    }
    for (size_t i : mains) on.push_back(1 + i);
    for (size_t i = 0; i < pairs_.size(); ++i) {
      const auto& [a, b] = pairs_[i];
      if (std::binary_search(mains.begin(), mains.end(), a) &&
          std::binary_search(mains.begin(), mains.end(), b)) {
        on.push_back(1 + main_.size() + i);
      }
    }
    return on;
  }

  // Gaussian elimination with partial pivoting (the ridge makes it regular).
  static std::vector<double> solve(std::vector<double> a, std::vector<double> b, size_t n) {
    for (size_t col = 0; col < n; ++col) {
      size_t pivot = col;
      for (size_t r = col + 1; r < n; ++r) {
        if (std::fabs(a[r * n + col]) > std::fabs(a[pivot * n + col])) pivot = r;
      }
      if (std::fabs(a[pivot * n + col]) < 1e-12) continue;
      if (pivot != col) {
        for (size_t k = 0; k < n; ++k) std::swap(a[col * n + k], a[pivot * n + k]);
        std::swap(b[col], b[pivot]);
      }
      for (size_t r = 0; r < n; ++r) {
        if (r == col) continue;
        const double f = a[r * n + col] / a[col * n + col];
        if (f == 0) continue;
        for (size_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
        b[r] -= f * b[col];
      }
    }
    std::vector<double> x(n, 0);
    for (size_t i = 0; i < n; ++i) {
      if (std::fabs(a[i * n + i]) >= 1e-12) x[i] = b[i] / a[i * n + i];
    }
    return x;
  }

  const TuneSpace& space_;
  std::vector<std::pair<size_t, size_t>> main_;   // (knob, level >= 1)
  std::vector<std::pair<size_t, size_t>> pairs_;  // two mains of different knobs
  std::vector<double> beta_;
};

}  // namespace

// The configs the model would try next: untried, not ruled out, predicted
// better than the leader's prediction by kProposalGain, best first.
std::vector<uint64_t> propose(const TuneSpace& space, const std::map<uint64_t, double>& levels,
                              const std::vector<std::vector<size_t>>& failed_digits,
                              const std::set<uint64_t>& tried,
                              const std::vector<std::vector<size_t>>& oom_digits,
                              const std::set<std::pair<size_t, size_t>>& avoid, uint64_t leader,
                              size_t count, uint64_t seed, int64_t look) {
  if (count == 0 || levels.empty()) return {};
  const KnobModel model(space, levels, failed_digits);
  // Against the model's own view of the leader: its shrinkage lowers every
  // prediction alike.
  const double leader_level = model.predict(leader);
  std::vector<uint64_t> pool;
  if (space.size() <= kEnumerate) {
    for (uint64_t c = 0; c < space.size(); ++c) pool.push_back(c);
  } else {
    random::SplitMix64 rng(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(look));
    for (size_t i = 0; i < kSample; ++i) {
      pool.push_back(static_cast<uint64_t>(
          random::uniform_int(rng, 0, static_cast<int64_t>(space.size() - 1))));
    }
    // And every config one knob away from the tried ones.
    for (uint64_t c : tried) {
      const auto d = space.digits(c);
      for (size_t k = 0; k < d.size(); ++k) {
        for (size_t j = 0; j < space.levels(k).size(); ++j) {
          auto n = d;
          n[k] = j;
          pool.push_back(space.index(n));
        }
      }
    }
    std::sort(pool.begin(), pool.end());
    pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
  }
  std::vector<std::pair<double, uint64_t>> scored;
  for (uint64_t c : pool) {
    if (tried.count(c) != 0U || ruled_out_by_memory(space, c, oom_digits)) continue;
    const auto d = space.digits(c);
    bool avoided = false;
    for (size_t k = 0; k < d.size() && !avoided; ++k) avoided = avoid.count({k, d[k]}) != 0U;
    if (avoided) continue;
    const double y = model.predict(c);
    if (y >= leader_level + kProposalGain) scored.push_back({-y, c});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<uint64_t> out;
  for (size_t i = 0; i < scored.size() && out.size() < count; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace detail

// A value of the memory knob as a number (a batch size).
static double knob_number(const TuneSpace& space, size_t knob, size_t level) {
  const Json& v = space.levels(knob)[level];
  return v.is_number() ? v.get<double>() : static_cast<double>(level);
}

bool ruled_out_by_memory(const TuneSpace& space, uint64_t c,
                         const std::vector<std::vector<size_t>>& oom_digits) {
  const int m = space.memory_knob();
  if (m < 0) return false;
  const auto mk = static_cast<size_t>(m);
  const auto d = space.digits(c);
  for (const auto& o : oom_digits) {
    bool same = true;
    for (size_t k = 0; k < d.size() && same; ++k) {
      same = k == mk ? knob_number(space, k, d[k]) >= knob_number(space, k, o[k]) : d[k] == o[k];
    }
    if (same) return true;
  }
  return false;
}

std::vector<uint64_t> screening_round(const TuneSpace& space, uint64_t baseline, size_t limit) {
  std::vector<uint64_t> out = {baseline};
  const auto base = space.digits(baseline);
  // Round-robin over the knobs, so that a limit keeps every knob's first changes.
  for (size_t j = 0;; ++j) {
    bool any = false;
    for (size_t k = 0; k < space.knobs(); ++k) {
      // The j-th other level of knob k.
      size_t level = j < base[k] ? j : j + 1;
      if (level >= space.levels(k).size()) continue;
      any = true;
      if (out.size() >= limit) return out;
      auto d = base;
      d[k] = level;
      out.push_back(space.index(d));
    }
    if (!any) return out;
  }
}

}  // namespace gpusweep::host
