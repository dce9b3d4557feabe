// Batch-size search; see batch_search.hpp.
#include "analysis/batch_search.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace gpusweep::host {

SearchMode parse_search_mode(const std::string& text) {
  if (text == "power") return SearchMode::power;
  if (text == "binsearch") return SearchMode::binsearch;
  throw UsageError("--mode " + text +
                   ": use power (double until it does not fit) or binsearch "
                   "(then bisect between the last fit and the first failure)");
}

BatchSearch::BatchSearch(SearchOptions options) : options_(options) {}

std::optional<int64_t> BatchSearch::next() const {
  if (!fit_) {
    // Nothing fit yet: the minimum, unless it already failed.
    return fail_ ? std::nullopt : std::optional<int64_t>(options_.min);
  }
  if (growing_) {
    if (options_.max && *fit_ >= *options_.max) return std::nullopt;
    int64_t n = *fit_ * 2;
    if (options_.max) n = std::min(n, *options_.max);
    return n;
  }
  if (options_.mode == SearchMode::power || !fail_) return std::nullopt;
  // Bisect until the bracket is one batch wide (Lightning), or narrower than
  // the margin would take off anyway.
  const auto tolerance = std::max<int64_t>(
      1, static_cast<int64_t>(std::floor(static_cast<double>(*fit_) * options_.margin)));
  if (*fail_ - *fit_ <= tolerance) return std::nullopt;
  return *fit_ + (*fail_ - *fit_) / 2;
}

void BatchSearch::record(int64_t size, bool fits) {
  if (fits) {
    if (!fit_ || size > *fit_) fit_ = size;
  } else {
    if (!fail_ || size < *fail_) fail_ = size;
    growing_ = false;
  }
}

std::optional<int64_t> BatchSearch::with_margin() const {
  if (!fit_) return std::nullopt;
  const auto n =
      static_cast<int64_t>(std::floor(static_cast<double>(*fit_) * (1.0 - options_.margin)));
  return std::max(options_.min, std::max<int64_t>(1, n));
}

std::optional<int64_t> back_off(int64_t candidate, const SearchOptions& options) {
  const auto smaller = static_cast<int64_t>(
      std::floor(static_cast<double>(candidate) * (1.0 - std::max(options.margin, 0.05))));
  if (smaller < options.min || smaller >= candidate) return std::nullopt;
  return smaller;
}

BatchCurve throughput_curve(const std::vector<BatchProbe>& probes) {
  std::map<int64_t, size_t> by_size;
  for (size_t i = 0; i < probes.size(); ++i) {
    const BatchProbe& p = probes[i];
    if (p.status != db::TrialStatus::ok || !p.summary) continue;
    auto it = by_size.find(p.batch);
    if (it == by_size.end() || p.verify) by_size[p.batch] = i;
  }
  BatchCurve c;
  for (const auto& [batch, i] : by_size) {
    c.points.push_back(i);
    const db::Summary& s = *probes[i].summary;
    c.unit = s.unit;
    if (s.throughput_median > c.best_rate) {
      c.best_rate = s.throughput_median;
      c.best_batch = batch;
    }
  }
  for (const auto& [batch, i] : by_size) {
    if (probes[i].summary->throughput_median >= 0.95 * c.best_rate) {
      if (batch < c.best_batch) c.saturation_batch = batch;
      break;
    }
  }
  return c;
}

}  // namespace gpusweep::host
