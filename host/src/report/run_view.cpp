// run's views; see run_view.hpp.
#include "report/run_view.hpp"

#include "analysis/compare.hpp"
#include "support/format.hpp"

#include <map>
#include <set>
#include <sstream>

namespace gpusweep::host {

std::string plan_text(const SweepSpec& spec, const PluginManifest& manifest,
                      const std::vector<PlannedTrial>& plan, const std::optional<Shard>& shard) {
  std::ostringstream out;
  const auto keys = varying_keys(spec);
  const auto configs = expand_configs(spec, manifest);
  out << "sweep '" << spec.name << "': workload " << manifest.name << " " << manifest.version
      << ", " << configs.size() << " configs x " << spec.measure.repeats
      << " repeats = " << plan.size() << " trials\n"
      << "protocol: " << spec.measure.warmup_steps << " warmup steps, ";
  if (const auto& target = spec.measure.target) {
    out << "blocks of " << spec.measure.steps_per_block << " steps until "
        << (target->metric.empty() ? manifest.quality_metric : target->metric) << " reaches "
        << number_text(target->value) << " (censored after "
        << (target->max_s > 0 ? human_seconds(target->max_s) + " of training"
                              : std::to_string(target->max_steps) + " steps");
    if (target->cap > 0) {
      out << ", or capped at " << number_text(target->cap)
          << "x the best time to target of its round";
    }
    out << ")";
  } else {
    out << spec.measure.blocks << " " << spec.measure.block_text();
  }
  out << ", timeout " << spec.measure.timeout_s << " s per trial\n";
  Table t({"config", "settings", "baseline"});
  t.right_align(0);
  for (size_t i = 0; i < configs.size(); ++i) {
    t.add_row({std::to_string(i + 1), keys.empty() ? "(base)" : config_label(configs[i], keys),
               !spec.baseline.empty() && matches(configs[i], spec.baseline) ? "yes" : ""});
  }
  out << t.render();
  if (shard) {
    out << "shard " << shard->label() << ": " << shard_slice(plan, *shard).size() << " of the "
        << plan.size() << " trials\n";
  }
  return out.str();
}

namespace {

bool failed(db::TrialStatus s) {
  return s == db::TrialStatus::failed || s == db::TrialStatus::oom ||
         s == db::TrialStatus::timeout || s == db::TrialStatus::crashed;
}

}  // namespace

RunVerdict run_verdict(const SweepSpec& spec, const std::vector<StoredTrial>& trials) {
  RunVerdict v;
  int64_t ok = 0, bad = 0, base_ok = 0, base_bad = 0;
  std::optional<int64_t> base_index;
  const db::TrialRecord* first_bad = nullptr;
  std::map<int64_t, bool> is_base;  // each config decided once, for all its repeats
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
    auto known = is_base.find(t.plan.config_index);
    if (known == is_base.end()) {
      const Json config = Json::parse(t.plan.config_json);
      known =
          is_base
              .emplace(t.plan.config_index, is_baseline(spec.baseline, t.plan.config_index, config))
              .first;
    }
    const bool base = known->second;
    if (base) base_index = t.plan.config_index;
    if (t.status == db::TrialStatus::ok) {
      ++ok;
      base_ok += base ? 1 : 0;
    } else if (failed(t.status)) {
      ++bad;
      base_bad += base ? 1 : 0;
      if (first_bad == nullptr || (base && first_bad->plan.config_index != *base_index)) {
        first_bad = &t;
      }
    }
  }
  const std::string see =
      first_bad == nullptr
          ? std::string()
          : "; its error and log: gpusweep results --trial " + std::to_string(first_bad->id) +
                (first_bad->error ? " (" + truncate(*first_bad->error, 100) + ")" : "");
  if (ok == 0 && bad > 0) {
    v.failure = "failed: no trial ended ok (" + std::to_string(bad) + " failed)" + see +
                "; exit status " + std::to_string(kExitTrialsFailed) + "\n";
  } else if (base_ok == 0 && base_bad > 0) {
    v.failure = "failed: the baseline, config " + std::to_string(*base_index + 1) +
                ", has no ok trial, so nothing is compared with it" + see + "; exit status " +
                std::to_string(kExitTrialsFailed) + "\n";
  }
  std::set<int64_t> configs;
  for (const auto& t : trials) configs.insert(t.row.plan.config_index);
  if (ok > 0 && configs.size() > 1 && spec.measure.repeats < kFewRepeats &&
      spec.measure.precision <= 0) {
    v.advice = "hint: measure.repeats is " + std::to_string(spec.measure.repeats) +
               (spec.measure.repeats == 1
                    ? ": one process per config, so the intervals cover its blocks only, not "
                      "the differences between processes that make verdicts hold"
                    : ": an interval over 2 repeats is too wide to act on") +
               ". Set \"repeats\": 3 or more, or \"precision\": 0.01 (rounds until each "
               "ratio is known within 1%), in the sweep's measure\n";
  }
  return v;
}

}  // namespace gpusweep::host
