// The batch-size search of `gpusweep tune-batch`, apart from running trials so
// that it is tested exactly: Lightning's BatchSizeFinder semantics. Grow by
// doubling from min until a size does not fit (or max is reached); in power
// mode the last size that fit is the answer, in binsearch mode the search then
// bisects between the last fit and the first failure. The answer is then
// shrunk by the margin (the found size is the edge, and real training
// fragments memory more than a probe does) and re-verified by the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gpusweep::host {

enum class SearchMode { power, binsearch };

// "power" | "binsearch"; throws UsageError otherwise.
SearchMode parse_search_mode(const std::string& text);

struct SearchOptions {
  SearchMode mode = SearchMode::power;
  int64_t min = 1;
  std::optional<int64_t> max;  // never probe above it
  double margin = 0.05;        // final = floor(largest fit x (1 - margin))
};

class BatchSearch {
 public:
  explicit BatchSearch(SearchOptions options);

  // The next size to probe; nullopt when the search is over.
  std::optional<int64_t> next() const;
  // What the probe of size found.
  void record(int64_t size, bool fits);

  std::optional<int64_t> largest_fit() const { return fit_; }
  std::optional<int64_t> first_failure() const { return fail_; }
  bool reached_max() const { return options_.max && fit_ && *fit_ >= *options_.max; }
  // The size to use and verify: the largest fit less the margin, at least min.
  std::optional<int64_t> with_margin() const;

 private:
  SearchOptions options_;
  std::optional<int64_t> fit_;   // largest size that fit
  std::optional<int64_t> fail_;  // smallest size that did not
  bool growing_ = true;
};

}  // namespace gpusweep::host
