// The batch-size search of `gpusweep tune-batch`, apart from running trials so
// that it is tested exactly: Lightning's BatchSizeFinder semantics. Grow by
// doubling from min until a size does not fit (or max is reached); in power
// mode the last size that fit is the answer, in binsearch mode the search then
// bisects between the last fit and the first failure. The answer is then
// shrunk by the margin (the found size is the edge, and real training
// fragments memory more than a probe does) and re-verified by the caller.
#pragma once

#include <gpusweep/db/store.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpusweep::host {

enum class SearchMode { power, binsearch };

// "power" | "binsearch"; throws UsageError otherwise.
SearchMode parse_search_mode(const std::string& text);

struct SearchOptions {
  SearchMode mode = SearchMode::power;
  int64_t min = 1;
  std::optional<int64_t> max;  // never probe above it
  double margin = 0.05;        // the cap = floor(largest fit x (1 - margin))
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

// The largest size that fits with the margin: floor(largest_fit x (1 -
// margin)), at least min and 1.
int64_t size_with_margin(int64_t largest_fit, const SearchOptions& options);

// One probe or verification trial of tune-batch.
struct BatchProbe {
  int64_t batch = 0;
  db::TrialStatus status = db::TrialStatus::pending;  // the trial's: ok, oom, failed, ...
  std::optional<db::Summary> summary;
  std::string error;
  bool verify = false;  // a verification with the full protocol
  int64_t trial_id = 0;
};

// What tune-batch found (run/batch_tuner.hpp runs it).
struct BatchTuneResult {
  std::vector<BatchProbe> probes;  // in the order they ran
  std::optional<int64_t> largest_fit;
  std::optional<int64_t> first_failure;
  bool reached_max = false;
  std::optional<int64_t> recommended;  // verified with the full protocol
  bool interrupted = false;            // Ctrl-C: the probes so far are recorded
};

// Throughput against batch size, from the probes that ran ok.
struct BatchCurve {
  // Index into the probes of the measurement shown for each size, by size:
  // its verification when there is one, else its last probe.
  std::vector<size_t> points;
  int64_t best_batch = 0;  // 0 when no probe ran ok
  double best_rate = 0;
  std::string unit;
  // Where throughput saturates: the smallest size within 5% of the best,
  // when that is smaller than the best size.
  std::optional<int64_t> saturation_batch;
};
BatchCurve throughput_curve(const std::vector<BatchProbe>& probes);

// A larger size is recommended over the fastest one when its throughput is
// within this share of the fastest (more samples a step for nearly nothing).
constexpr double kLargerWithin = 0.05;

// The sizes to verify for the recommendation, in order of preference, among
// the sizes measured ok at or below cap (the largest fit less the margin):
// first the fastest (verifications counted before probes), or the largest
// size within kLargerWithin of its throughput; then the others, fastest
// first. Sizes above the cap fit in a probe but not with the margin, and
// are never recommended.
std::vector<int64_t> recommendation_order(const std::vector<BatchProbe>& probes, int64_t cap);

// tune-batch's recommendation: the fastest size that fits with the margin,
// verified with the full protocol. verify(size) runs that verification and
// returns its outcome (the caller records it in probes). Where the fastest
// probe lies above the cap (throughput still rising), the cap itself is
// verified first, so that it competes with a measured throughput. Tries at
// most `attempts` verifications in all; nothing when none of them ran ok.
std::optional<int64_t> recommend_batch(std::vector<BatchProbe>& probes, int64_t cap,
                                       const std::function<BatchProbe(int64_t size)>& verify,
                                       int attempts = 3);

}  // namespace gpusweep::host
