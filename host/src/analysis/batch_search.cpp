// Batch-size search; see batch_search.hpp.
#include "analysis/batch_search.hpp"

#include "support/error.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

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

int64_t size_with_margin(int64_t largest_fit, const SearchOptions& options) {
  const auto n =
      static_cast<int64_t>(std::floor(static_cast<double>(largest_fit) * (1.0 - options.margin)));
  return std::max(options.min, std::max<int64_t>(1, n));
}

std::optional<int64_t> BatchSearch::with_margin() const {
  if (!fit_) return std::nullopt;
  return size_with_margin(*fit_, options_);
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

std::vector<int64_t> recommendation_order(const std::vector<BatchProbe>& probes, int64_t cap) {
  const BatchCurve curve = throughput_curve(probes);
  std::vector<std::pair<int64_t, double>> fits;  // (size, throughput) at or below the cap
  for (size_t i : curve.points) {
    if (probes[i].batch <= cap)
      fits.emplace_back(probes[i].batch, probes[i].summary->throughput_median);
  }
  // Fastest first; among equal rates the larger size.
  std::sort(fits.begin(), fits.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  std::vector<int64_t> order;
  if (fits.empty()) return order;
  // The largest size within kLargerWithin of the fastest leads.
  int64_t lead = fits.front().first;
  for (const auto& [size, rate] : fits) {
    if (rate >= (1 - kLargerWithin) * fits.front().second) lead = std::max(lead, size);
  }
  order.push_back(lead);
  for (const auto& [size, rate] : fits) {
    if (size != lead) order.push_back(size);
  }
  return order;
}

std::optional<int64_t> recommend_batch(std::vector<BatchProbe>& probes, int64_t cap,
                                       const std::function<BatchProbe(int64_t size)>& verify,
                                       int attempts) {
  std::set<int64_t> verified_ok;
  // A size whose verification failed does not fit with the full protocol:
  // neither it nor anything larger is a candidate any more.
  int64_t limit = cap;
  auto run = [&](int64_t size) {
    --attempts;
    probes.push_back(verify(size));
    if (probes.back().status == db::TrialStatus::ok) {
      verified_ok.insert(size);
    } else {
      limit = std::min(limit, size - 1);
    }
  };
  const BatchCurve curve = throughput_curve(probes);
  const bool cap_measured = std::any_of(curve.points.begin(), curve.points.end(),
                                        [&](size_t i) { return probes[i].batch == cap; });
  if (curve.best_batch > cap && !cap_measured && attempts > 0) run(cap);
  // Each verification may reorder the candidates (the full protocol's figure
  // replaces a probe's sketch): the leader is recomputed until it is one
  // that verified ok.
  for (;;) {
    const std::vector<int64_t> order = recommendation_order(probes, limit);
    if (order.empty()) return std::nullopt;
    if (verified_ok.count(order.front()) != 0U) return order.front();
    if (attempts <= 0) return std::nullopt;
    run(order.front());
  }
}

}  // namespace gpusweep::host
