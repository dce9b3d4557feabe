// Claims against measurements; see claims.hpp.
#include "analysis/claims.hpp"

#include "spec/device.hpp"

#include "analysis/compare.hpp"
#include "analysis/precision.hpp"

#include "analysis/metric_values.hpp"
#include "spec/metrics.hpp"

#include "analysis/significance.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace gpusweep::host {

namespace {

bool gpu_only_metric(const std::string& metric) {
  return metric == "transfer_time" || metric == "gpu_utilization";
}

double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::vector<double> flat(const std::vector<RunSamples>& runs) {
  std::vector<double> out;
  for (const auto& r : runs) out.insert(out.end(), r.values.begin(), r.values.end());
  return out;
}

// What the metric is called where it is missing.
std::string metric_words(const std::string& metric) {
  if (metric == "peak_memory") return "peak memory";
  if (metric == "input_wait") return "its input-wait share";
  if (metric == "quality") return "a quality metric";
  if (metric.rfind("stat:", 0) == 0) return "the statistic '" + metric.substr(5) + "'";
  return metric;
}

// Which way a refuted claim missed: the same direction but more or less of
// it, no change where one was claimed, or the opposite of the claim.
std::string refuted_because(double ratio, double low, double high, const Claim& claim) {
  const bool claims_gain = claim.low > 1;   // the metric is to rise
  const bool claims_drop = claim.high < 1;  // the metric is to fall
  if ((claims_gain || claims_drop) && !std::isnan(low) && low <= 1 && high >= 1) {
    return "no change shown (the interval includes 1), and the claimed change is outside it";
  }
  if (claims_gain || claims_drop) {
    const bool same_way = claims_gain ? ratio > 1 : ratio < 1;
    if (!same_way)
      return "the opposite of the claim: " + metric_words(claim.metric) +
             (claims_gain ? " fell" : " rose");
    const bool more = claims_gain ? ratio > claim.high : ratio < claim.low;
    return more ? "a larger change than claimed" : "the right direction, less than claimed";
  }
  return ratio > claim.high ? "higher than claimed" : "lower than claimed";
}

}  // namespace

std::string expected_text(const Claim& claim) {
  auto r = [](double v) { return fixed(v, v < 10 ? 2 : 1); };
  return claim.low == claim.high ? r(claim.low) + "x" : r(claim.low) + "-" + r(claim.high) + "x";
}

const char* verdict_name(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::confirmed:
      return "confirmed";
    case ClaimVerdict::overlaps:
      return "overlaps the claim";
    case ClaimVerdict::refuted:
      return "refuted";
    case ClaimVerdict::inconclusive:
      return "inconclusive";
    default:
      return "not measurable here";
  }
}

ClaimVerdict claim_verdict(double ratio, double low, double high, double expected_low,
                           double expected_high) {
  (void)ratio;
  if (std::isnan(low) || std::isnan(high)) return ClaimVerdict::inconclusive;
  const bool meets = high >= expected_low && low <= expected_high;
  if (!meets) return ClaimVerdict::refuted;
  if (low >= expected_low && high <= expected_high) return ClaimVerdict::confirmed;
  const bool claims_change = expected_low > 1 || expected_high < 1;
  const bool excludes_one = low > 1 || high < 1;
  if (claims_change && !excludes_one) return ClaimVerdict::inconclusive;
  return ClaimVerdict::overlaps;
}

std::optional<std::string> unmeasurable(const Claim& claim, const Features& features) {
  for (const auto& f : claim.required_features) {
    if ((f == "cuda" || f == "tensor_cores") && !features.cuda) {
      return "needs a CUDA device" + std::string(f == "tensor_cores" ? " with Tensor Cores" : "") +
             "; the trials ran without one";
    }
    if (f == "tensor_cores" && !features.tensor_cores) {
      return "needs Tensor Cores (compute capability 7.0 or newer); the trials' GPUs have none";
    }
    if (f == "xla") {
      return "needs XLA, which LibTorch's C++ API does not offer (torch_xla is Python only)";
    }
    if (f == "torch_compile") {
      return "needs torch.compile (PyTorch 2.x, Python only); LibTorch 1.13's C++ API has no "
             "equivalent";
    }
  }
  if (gpu_only_metric(claim.metric) && !features.cuda) {
    return claim.metric == "transfer_time"
               ? std::string(
                     "host-device transfer time exists only with a GPU; the trials ran "
                     "without one (on a CPU the data never leaves host memory)")
               : std::string(
                     "GPU utilisation needs a GPU (read through NVML); the trials ran "
                     "without one");
  }
  return std::nullopt;
}

namespace {

// A claim on time_to_target: the ratio paired by seed with censored trials
// as bounds (paired_time_ratio), judged like any other.
ClaimResult time_claim(ClaimResult r, const Claim& claim, const MetricRuns& base,
                       const MetricRuns& changed) {
  const auto ratio = paired_time_ratio(base.target_times, changed.target_times, 0.95);
  if (!ratio) {
    r.verdict = ClaimVerdict::not_measurable;
    r.reason = "no seed ran both configs to the target";
    return r;
  }
  r.ratio = ratio->ratio;
  if (!ratio->interval) {
    r.verdict = ClaimVerdict::inconclusive;
    r.reason = ratio->note;
    return r;
  }
  r.low = ratio->low;
  r.high = ratio->high;
  r.design = ratio->note;
  r.verdict = claim_verdict(*r.ratio, r.low, r.high, claim.low, claim.high);
  if (r.verdict == ClaimVerdict::refuted)
    r.reason = refuted_because(*r.ratio, r.low, r.high, claim);
  if (r.verdict == ClaimVerdict::inconclusive) {
    r.reason = "the interval includes 1: no change shown at this sample size";
  }
  return r;
}

}  // namespace

// Long by design: one claim's path from its two configs to a verdict (not
// measurable here, no trials, the ratio and its interval, the verdict) reads
// top to bottom, each early exit with its reason.
std::vector<ClaimResult> evaluate_claims(
    const SweepSpec& spec, const std::vector<Json>& configs, const Features& features,
    const std::function<MetricRuns(const Json& config, const std::string& metric)>& values_of) {
  std::vector<ClaimResult> out;
  for (const Claim& claim : spec.claims) {
    ClaimResult r;
    r.claim = &claim;
    Json from_partial = claim.baseline.empty() ? spec.baseline : claim.baseline;
    if (from_partial.empty() && !configs.empty()) from_partial = configs.front();
    Json to_partial = from_partial;
    for (const auto& [k, v] : claim.change.items()) to_partial[k] = v;
    auto find = [&](const Json& partial) -> const Json* {
      const Json* found = nullptr;
      for (const auto& c : configs) {
        if (!matches(c, partial)) continue;
        if (found != nullptr) return nullptr;  // ambiguous
        found = &c;
      }
      return found;
    };
    const Json* from = find(from_partial);
    const Json* to = find(to_partial);
    r.from = from ? *from : from_partial;
    r.to = to ? *to : to_partial;
    if (auto why = unmeasurable(claim, features)) {
      r.verdict = ClaimVerdict::not_measurable;
      r.reason = *why;
      out.push_back(std::move(r));
      continue;
    }
    if (claim.change.empty()) {
      r.verdict = ClaimVerdict::not_measurable;
      r.reason = "the claim names no change this workload's settings can make";
      out.push_back(std::move(r));
      continue;
    }
    if (from == nullptr || to == nullptr) {
      r.verdict = ClaimVerdict::not_measurable;
      r.reason = "the sweep has no single config " + (from ? to_partial : from_partial).dump();
      out.push_back(std::move(r));
      continue;
    }
    const MetricRuns base = values_of(*from, claim.metric);
    const MetricRuns changed = values_of(*to, claim.metric);
    for (const auto* side : {&base, &changed}) {
      if (side->runs.empty() && r.reason.empty()) {
        r.reason = (side == &base ? "the baseline " : "the changed config ") +
                   (side->problem.empty() ? "reports no " + metric_words(claim.metric)
                                          : std::string("did not run: ") + side->problem);
      }
    }
    if (!r.reason.empty()) {
      r.verdict = ClaimVerdict::not_measurable;
      out.push_back(std::move(r));
      continue;
    }
    if (claim.metric == "time_to_target") {
      out.push_back(time_claim(std::move(r), claim, base, changed));
      continue;
    }
    const auto all_base = flat(base.runs), all_changed = flat(changed.runs);
    const bool positive =
        std::all_of(all_base.begin(), all_base.end(), [](double v) { return v > 0; }) &&
        std::all_of(all_changed.begin(), all_changed.end(), [](double v) { return v > 0; });
    // As compare estimates it: paired by repeat (and by cycle for block
    // values), repeats as their own level.
    // At the sequential level where the run stopped once precise (precision,
    // a tune's confirmation rounds), as compare gives it.
    const double level = stops_when_precise(spec) ? kSequentialLevel : 0.95;
    const auto estimate = positive ? estimate_ratio(base.runs, changed.runs, level) : std::nullopt;
    if (estimate) {
      r.ratio = estimate->ratio;
      r.low = estimate->low;
      r.high = estimate->high;
      r.design = design_note(*estimate);
    } else if (mean(all_base) > 0) {
      r.ratio = mean(all_changed) / mean(all_base);
      r.reason =
          "one value each: no interval, no verdict (it takes two or more ok repeats of each: "
          "measure.repeats 1, or the other repeats failed or have not run yet)";
    } else {
      r.verdict = ClaimVerdict::not_measurable;
      r.reason = "the baseline's " + metric_words(claim.metric) + " is 0: no ratio";
      out.push_back(std::move(r));
      continue;
    }
    r.verdict = claim_verdict(*r.ratio, r.low, r.high, claim.low, claim.high);
    if (r.verdict == ClaimVerdict::inconclusive && r.reason.empty()) {
      r.reason = "the interval includes 1: no change shown at this sample size";
    } else if (r.verdict == ClaimVerdict::overlaps) {
      r.reason =
          "the interval meets the claimed range but reaches beyond it: compatible with "
          "the claim, not proof of it";
    } else if (r.verdict == ClaimVerdict::refuted && r.reason.empty()) {
      r.reason = refuted_because(*r.ratio, r.low, r.high, claim);
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// The statistic a claim's metric is read from: a plugin's ("stat:NAME"), or
// the one a known metric is read from (spec/metrics.cpp); "" for the
// metrics of the blocks and the summary.
std::string stat_of_metric(const std::string& metric) {
  if (metric == "throughput" || metric == "step_time") return "";
  const Metric* known = find_metric(metric);
  if (known != nullptr && known->in_summary) return "";
  if (known != nullptr && *known->stat != '\0') return known->stat;
  return metric.rfind("stat:", 0) == 0 ? metric.substr(5) : metric;
}

// Each claimed statistic's last value of every trial, in one read: the
// names, and by trial id their values in the names' order.
struct ClaimStats {
  std::vector<std::string> names;
  std::unordered_map<int64_t, std::vector<std::optional<double>>> values;

  std::optional<double> of(int64_t trial, const std::string& name) const {
    const auto t = values.find(trial);
    const auto n = std::find(names.begin(), names.end(), name);
    if (t == values.end() || n == names.end()) return std::nullopt;
    return t->second[static_cast<size_t>(n - names.begin())];
  }
};

ClaimStats claim_stats(db::Store& store, int64_t sweep_id, const SweepSpec& spec) {
  ClaimStats out;
  for (const auto& claim : spec.claims) {
    const std::string name = stat_of_metric(claim.metric);
    if (!name.empty() && std::find(out.names.begin(), out.names.end(), name) == out.names.end())
      out.names.push_back(name);
  }
  out.values = store.last_stats(sweep_id, out.names);
  return out;
}

// One ok trial's values of a claim's metric, paired as compare pairs them:
// its blocks for throughput and step time, else one value per trial.
RunSamples metric_run(db::Store& store, const StoredTrial& st, const ClaimStats& stats,
                      const std::string& metric) {
  const db::TrialRecord& t = st.row;
  RunSamples run = run_of(st);
  if (metric == "throughput") {
    db::BlockSeries s = store.series(t.id);
    run.values = std::move(s.throughput);
    run.cycles = std::move(s.cycles);
  } else if (metric == "step_time") {
    for (const auto& b : store.blocks(t.id)) {
      const auto step_time = db::block_step_time(b);
      if (!step_time) continue;
      run.values.push_back(*step_time);
      run.cycles.push_back(b.cycle);
    }
  } else if (const std::string name = stat_of_metric(metric); name.empty()) {
    if (auto v = summary_metric(*t.summary, metric)) run.values.push_back(*v);
  } else if (auto last = stats.of(t.id, name)) {
    run.values.push_back(*last);
  }
  return run;
}

}  // namespace

std::vector<ClaimResult> evaluate_claims(db::Store& store, const db::SweepRecord& sweep,
                                         const SweepSpec& spec) {
  if (spec.claims.empty()) return {};
  Features features;
  const auto environments = store.environments(sweep.id);
  for (const auto& e : environments) {
    features.cuda = features.cuda || e.cuda_available;
    const Json gpus = Json::parse(e.gpus_json, nullptr, false);
    for (const auto& gpu : gpus.is_array() ? gpus : Json::array()) {
      TrialDevice device;
      device.info = gpu;
      features.tensor_cores = features.tensor_cores || compute_capability(device) >= 7.0;
    }
  }
  const ClaimStats stats = claim_stats(store, sweep.id, spec);
  // Each config (parsed once) with its trials, in plan order: on a tune
  // run its confirmation rounds only, as compare reads it (the racing
  // rounds picked the winner because it looked best in them).
  const Rounds rounds = rounds_for(spec, false);
  std::map<int64_t, std::vector<StoredTrial>> by_config;
  for (auto& t : stored_trials(store, sweep.id, db::TrialFields::all)) {
    if (in_rounds(t.row, rounds)) by_config[t.row.plan.config_index].push_back(std::move(t));
  }
  std::vector<Json> configs;
  std::vector<const std::vector<StoredTrial>*> trials_of;  // parallel to configs
  for (const auto& [idx, trials] : by_config) {
    configs.push_back(Json::parse(trials.front().row.plan.config_json));
    trials_of.push_back(&trials);
  }
  auto values_of = [&](const Json& config, const std::string& metric) {
    MetricRuns m;
    for (size_t c = 0; c < configs.size(); ++c) {
      if (configs[c] != config) continue;
      for (const auto& st : *trials_of[c]) {
        const db::TrialRecord& t = st.row;
        if (t.status != db::TrialStatus::ok || !t.summary) {
          if (m.problem.empty() && t.status != db::TrialStatus::pending) {
            m.problem = db::status_name(t.status) + (t.error ? ": " + *t.error : std::string());
          }
          continue;
        }
        RunSamples run = metric_run(store, st, stats, metric);
        if (metric == "time_to_target") {
          if (const auto time = st.target()) m.target_times.push_back(*time);
        }
        if (!run.values.empty()) m.runs.push_back(std::move(run));
      }
    }
    return m;
  };
  return evaluate_claims(spec, configs, features, values_of);
}

}  // namespace gpusweep::host
