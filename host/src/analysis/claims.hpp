// A sweep's claims against what it measured: each claim's metric ratio
// (changed config over its baseline) with a 95% interval, and a verdict.
#pragma once

#include "analysis/ratio_model.hpp"
#include "analysis/time_to_target.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpusweep::host {

// One config's values of a claim's metric: one run per ok repeat (block
// values with their cycles for throughput and step_time, one value per
// repeat otherwise), or why there are none.
struct MetricRuns {
  std::vector<RunSamples> runs;
  std::string problem;  // e.g. "skipped: tf32 applies to CUDA ...; device is cpu"
  // time_to_target: each trial's time with its censoring, for the paired
  // ratio that counts censored trials as bounds (time_to_target.hpp).
  std::vector<TargetTime> target_times;
};

enum class ClaimVerdict { confirmed, overlaps, refuted, inconclusive, not_measurable };
// "confirmed", "overlaps the claim", "refuted", "inconclusive", "not measurable here".
const char* verdict_name(ClaimVerdict v);

struct ClaimResult {
  const Claim* claim = nullptr;
  Json from;  // the two configs compared
  Json to;
  std::optional<double> ratio;  // measured, changed / baseline
  double low = NAN;             // its 95% interval (NAN: one repeat, no interval)
  double high = NAN;
  ClaimVerdict verdict = ClaimVerdict::not_measurable;
  std::string reason;
  std::string design;  // what the interval cannot know (ratio_model's design_note)
};

// Machine features the sweep's trials ran with (from their environments).
struct Features {
  bool cuda = false;
  // A GPU the trials ran with has Tensor Cores (compute capability 7.0 or
  // newer: Volta); false without a GPU or when no trial reported one.
  bool tensor_cores = false;
};

// The verdict for a measured ratio against an expected range: confirmed when
// the interval lies inside the range (the change is real and of the claimed
// size); refuted when it lies wholly outside; inconclusive when it includes 1
// and the range claims a change (too wide to tell), or when there is no
// interval (a point decides nothing); overlaps when it meets the range and
// reaches beyond it: compatible with the claim, not proof of it.
ClaimVerdict claim_verdict(double ratio, double low, double high, double expected_low,
                           double expected_high);

// Why a claim cannot be measured on this machine, or nothing if it can.
std::optional<std::string> unmeasurable(const Claim& claim, const Features& features);

// Evaluates each claim of spec against a sweep's values: values_of(config,
// metric) gives a config's values (see MetricRuns).
std::vector<ClaimResult> evaluate_claims(
    const SweepSpec& spec, const std::vector<Json>& configs, const Features& features,
    const std::function<MetricRuns(const Json& config, const std::string& metric)>& values_of);

// The same, reading the values of one stored sweep run.
std::vector<ClaimResult> evaluate_claims(db::Store& store, const db::SweepRecord& sweep,
                                         const SweepSpec& spec);

// "1.20-1.30x" or "0.10x".
std::string expected_text(const Claim& claim);

}  // namespace gpusweep::host
