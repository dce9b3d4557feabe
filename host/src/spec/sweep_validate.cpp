// Checking a sweep against its plugin's manifest (validate_sweep): the
// grid's size (grid_size), every setting, distinct configs, the claims'
// configs, measure.target's metric and the baseline.
#include "spec/sweep_internal.hpp"

#include "spec/hashing.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>

namespace gpusweep::host {

using detail::suggestion;
using detail::usage;

uint64_t grid_size(const SweepSpec& spec) {
  uint64_t n = 1;
  for (const auto& [key, values] : spec.grid.items()) {
    const uint64_t k = values.size();
    if (k != 0 && n > std::numeric_limits<uint64_t>::max() / k) {
      return std::numeric_limits<uint64_t>::max();
    }
    n *= k;
  }
  return n;
}

// The checks of a sweep against the manifest in the order a
// user reads the file (grid size, base, grid, baseline, claims), sharing the
// expanded configs and the check and count helpers; each is a few lines.
namespace {

// measure.target against the manifest: a metric the workload declares (its
// quality metric, or one of its "metrics"), a value it can take, and a
// direction where the manifest gives none.
void validate_target(const SweepSpec& spec, const PluginManifest& manifest) {
  const TargetSpec& t = *spec.measure.target;
  const std::string name = t.metric.empty() ? manifest.quality_metric : t.metric;
  const std::string where = t.metric.empty() ? "measure.target" : "measure.target.metric";
  const auto known = manifest.target_metric_names();
  std::string listed;
  for (const auto& n : known) listed += (listed.empty() ? "" : ", ") + n;
  if (name.empty()) {
    usage(spec.source, where,
          "workload '" + manifest.name +
              "' declares no quality metric: name the metric to reach (\"metric\")");
  }
  const auto info = manifest.target_metric(name);
  if (!info) {
    usage(spec.source, where,
          "'" + name + "' is not a metric workload '" + manifest.name + "' reports" +
              suggestion(name, known) + " (it declares: " + (listed.empty() ? "none" : listed) +
              "; gpusweep plugins " + manifest.name + ")");
  }
  const bool out_of_range =
      (info->min && t.value < *info->min) || (info->max && t.value > *info->max);
  if (out_of_range) {
    const std::string range = std::string("[") + (info->min ? number_text(*info->min) : "-inf") +
                              ", " + (info->max ? number_text(*info->max) : "inf") + "]";
    usage(spec.source, "measure.target.value",
          number_text(t.value) + " is outside what '" + name + "' can take, " + range +
              ": no trial could reach it; give a value inside it");
  }
}

// Each claim compares two configs of this sweep: both must be in it.
// `check` judges a setting against the manifest (validate_sweep's).
void validate_claims(
    const SweepSpec& spec, const PluginManifest& manifest,
    const std::function<void(const std::string&, const std::string&, const Json&)>& check) {
  if (spec.claims.empty()) return;
  const auto configs = expand_configs(spec, manifest);
  auto count = [&](const Json& partial) {
    return std::count_if(configs.begin(), configs.end(),
                         [&](const Json& c) { return matches(c, partial); });
  };
  for (size_t i = 0; i < spec.claims.size(); ++i) {
    const Claim& c = spec.claims[i];
    const std::string where = "claims[" + std::to_string(i) + "]";
    if (c.metric == "time_to_target" && !spec.measure.target) {
      usage(spec.source, where + ".metric",
            "time_to_target needs measure.target (the value to train to and its budget); add "
            "it, or claim on another metric");
    }
    if (c.change.empty()) continue;  // nothing to compare here (see Claim::required_features)
    for (const auto& [key, value] : c.change.items()) check(where + ".change." + key, key, value);
    for (const auto& [key, value] : c.baseline.items())
      check(where + ".baseline." + key, key, value);
    Json from = c.baseline.empty() ? spec.baseline : c.baseline;
    if (from.empty() && !configs.empty()) from = configs.front();
    Json to = from;
    for (const auto& [key, value] : c.change.items()) to[key] = value;
    for (const auto& [what, partial] :
         {std::pair<const char*, const Json&>{"baseline", from}, {"changed", to}}) {
      const auto n_match = count(partial);
      if (n_match != 1) {
        usage(spec.source, where,
              std::string("its ") + what + " config " + partial.dump() + " matches " +
                  std::to_string(n_match) +
                  " of the sweep's configurations; a claim compares "
                  "exactly two: put the changed values in the grid, and pin the other knobs "
                  "in the claim's \"baseline\"");
      }
    }
  }
}

}  // namespace

void refuse_check(const SweepSpec& spec) {
  if (!spec.check) return;
  usage(spec.source, "check",
        "this sweep is a check of two builds (written by gpusweep check): continue it with "
        "`gpusweep check SWEEP --base PATH --head PATH --resume`, or drop \"check\" to run "
        "the sweep as it is");
}

void validate_check_sweep(const SweepSpec& spec) {
  if (spec.check) {
    usage(spec.source, "check",
          "this is a check's stored sweep; give the sweep file it was made from");
  }
  if (spec.grid.contains(kBuildKey) || spec.base.contains(kBuildKey)) {
    usage(spec.source, spec.grid.contains(kBuildKey) ? "grid.build" : "base.build",
          "'build' is the check's own grid axis (base, head): rename the setting, or run the "
          "sweep with gpusweep run");
  }
  if (spec.measure.target) {
    usage(spec.source, "measure.target",
          "check compares throughput; run a time-to-target sweep of each build with gpusweep "
          "run and compare them");
  }
  if (spec.measure.repeats < 3) {
    usage(spec.source, "measure.repeats",
          std::to_string(spec.measure.repeats) +
              ": a check's verdict needs the spread of 3 paired repeats at least, and its "
              "stopping rules are calibrated from there: give 3 or more "
              "(--set measure.repeats=3)");
  }
}

void make_check(SweepSpec& spec, CheckSpec check, double budget_s) {
  spec.grid[kBuildKey] = Json::array({kBaseBuild, kHeadBuild});
  if (!spec.baseline.empty()) spec.baseline[kBuildKey] = kBaseBuild;
  spec.measure.precision = 0;
  spec.measure.budget_s = budget_s;
  check.budget_s = budget_s;
  spec.check = std::move(check);
}

namespace {

// How an unknown setting's error names the workload, and the command that
// lists its settings: a bridge workload's are its selected file's, which the
// user wrote (its name, and `--set module=...` in the command).
std::pair<std::string, std::string> workload_words(const SweepSpec& spec,
                                                   const PluginManifest& manifest) {
  std::string list = "gpusweep plugins " + manifest.name;
  std::string workload = "workload '" + manifest.name + "'";
  for (const auto& p : manifest.params) {
    const auto chosen = spec.base.find(p.name);
    if (names_selected_file(p) && chosen != spec.base.end() && chosen->is_string()) {
      list += " --set " + p.name + "=" + chosen->get<std::string>();
      // The selected file is what the user wrote: name it, not the bridge.
      workload += " (" + p.name + " " +
                  std::filesystem::path(chosen->get<std::string>()).filename().string() + ")";
    }
  }
  return {workload, list};
}

}  // namespace

void validate_sweep(const SweepSpec& spec, const PluginManifest& manifest) {
  refuse_check(spec);
  // The size first: a billion-config grid is refused with its count, before
  // any per-value work.
  const uint64_t n = grid_size(spec);
  if (n > kMaxConfigs) {
    usage(spec.source, "grid",
          "the grid has " +
              (n == std::numeric_limits<uint64_t>::max() ? std::string("over 2^64")
                                                         : std::to_string(n)) +
              " configurations, more than the " + std::to_string(kMaxConfigs) +
              " gpusweep runs in one sweep; split it or drop values");
  }
  const auto names = manifest.param_names();
  // A bridge workload's settings are its selected module's: the command
  // that lists them names the module too.
  // Named copies, not a structured binding: the lambda below captures them.
  const auto words = workload_words(spec, manifest);
  const std::string& workload = words.first;
  const std::string& list = words.second;
  auto check = [&](const std::string& where, const std::string& key, const Json& value) {
    const ParamSpec* p = manifest.find(key);
    // A value a command's --set gave is that option's, not the file's.
    const bool set =
        where.rfind("base.", 0) == 0 &&
        std::find(spec.overridden.begin(), spec.overridden.end(), key) != spec.overridden.end();
    const std::string source = set ? "--set " + key + "=" + value.dump() : spec.source;
    const std::string at = set ? "" : where;
    if (p == nullptr) {
      usage(source, at,
            "'" + key + "' is not a setting of " + workload + suggestion(key, names) +
                " (list them with: " + list + ")");
    }
    if (auto problem = p->check(value)) usage(source, at, *problem);
  };
  for (const auto& [key, value] : spec.base.items()) check("base." + key, key, value);
  for (const auto& [key, values] : spec.grid.items()) {
    for (size_t i = 0; i < values.size(); ++i) {
      check("grid." + key + "[" + std::to_string(i) + "]", key, values[i]);
    }
    std::set<std::string> distinct;
    for (const auto& v : values) {
      if (!distinct.insert(v.dump()).second) {
        usage(spec.source, "grid." + key, "value " + v.dump() + " is listed twice");
      }
    }
  }
  for (const auto& [key, value] : spec.baseline.items()) check("baseline." + key, key, value);

  {
    // Values that differ only in spelling (1 and 1.0 for a float) make the
    // same config twice; each config must be distinct.
    std::map<std::string, size_t> seen;
    const auto configs = expand_configs(spec, manifest);
    for (size_t i = 0; i < configs.size(); ++i) {
      auto [it, fresh] = seen.emplace(canonical_json(configs[i]), i);
      if (!fresh) {
        usage(spec.source, "grid",
              "configs #" + std::to_string(it->second + 1) + " and #" + std::to_string(i + 1) +
                  " are the same settings (" + configs[i].dump() + "); drop the duplicate value");
      }
    }
  }
  validate_claims(spec, manifest, check);
  if (spec.measure.target) validate_target(spec, manifest);
  if (!spec.baseline.empty()) {
    bool any = false;
    for (const auto& c : expand_configs(spec, manifest)) any = any || matches(c, spec.baseline);
    if (!any) {
      usage(spec.source, "baseline",
            spec.baseline.dump() + " matches none of the " + std::to_string(n) +
                " configurations; use values that appear in base or grid");
    }
  }
}

}  // namespace gpusweep::host
