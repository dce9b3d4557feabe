// A workload's runs as series with change points; see history.hpp.
#include "analysis/history.hpp"

#include "analysis/check.hpp"
#include "analysis/compare.hpp"
#include "analysis/significance.hpp"
#include "analysis/stored.hpp"
#include "spec/hashing.hpp"
#include "spec/training_libraries.hpp"
#include "support/error.hpp"

#include <algorithm>
#include <cmath>
#include <gpusweep/runtime_info.hpp>
#include <map>
#include <regex>
#include <set>
#include <tuple>

namespace gpusweep::host {

namespace {

// values without "" and repeats, in the order first seen, joined by ", ".
std::string join_distinct(const std::vector<std::string>& values,
                          const std::string& separator = ", ") {
  std::vector<std::string> seen;
  std::string out;
  for (const auto& v : values) {
    if (v.empty() || std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
    seen.push_back(v);
    out += (out.empty() ? "" : separator) + v;
  }
  return out;
}

std::string build_label(const db::TrialRecord& t) {
  const std::string hash = t.run_plugin_hash.value_or(t.plan.plugin_hash);
  return t.plan.plugin_version + (hash.empty() ? "" : " " + hash.substr(0, 8));
}

// What a config's ok trials of one run say, field by field, before joining.
struct Gathered {
  std::vector<double> medians;
  std::vector<std::string> machines, torch, cuda, driver, gpusweep, builds, paths, hashes, python;
  std::map<std::string, std::vector<std::string>> packages;
};

void add_trial(const db::TrialRecord& t, const std::map<int64_t, db::EnvironmentInfo>& envs,
               Gathered& g) {
  g.medians.push_back(t.summary->throughput_median);
  g.builds.push_back(build_label(t));
  g.paths.push_back(t.plan.plugin_path);
  g.hashes.push_back(t.run_plugin_hash.value_or(t.plan.plugin_hash));
  if (!t.environment_id) return;
  const auto e = envs.find(*t.environment_id);
  if (e == envs.end()) return;
  const HistoryVersions v = versions_of(e->second);
  g.machines.push_back(machine_key(e->second));
  g.torch.push_back(v.torch);
  g.cuda.push_back(v.cuda);
  g.driver.push_back(v.driver);
  g.gpusweep.push_back(v.gpusweep);
  g.python.push_back(v.python);
  for (const auto& [name, version] : v.packages) g.packages[name].push_back(version);
}

// Each config of one finished run with a throughput, a point each.
void read_run(db::Store& store, const db::SweepRecord& run, const std::string& source,
              const std::map<int64_t, db::EnvironmentInfo>& envs, std::vector<HistoryPoint>& out) {
  const SweepSpec spec = stored_spec(run);
  // A confirmation re-measures old builds now: not points of the series.
  if (spec.check && spec.check->confirm) return;
  const Rounds rounds = rounds_for(spec, false);
  // The trials read once, for compare's figures and the points' own.
  const std::vector<StoredTrial> trials = stored_trials(store, run.id, db::TrialFields::all);
  const std::vector<ConfigSamples> configs = gather_configs(store, run.id, trials, true, rounds);
  std::map<int64_t, Gathered> by_config;
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
    if (t.status != db::TrialStatus::ok || !t.summary || !in_rounds(t, rounds)) continue;
    add_trial(t, envs, by_config[t.plan.config_index]);
  }
  for (const auto& c : configs) {
    const std::optional<double> throughput = config_throughput(c);
    const auto g = by_config.find(c.config_index);
    if (!throughput || g == by_config.end()) continue;
    HistoryPoint p;
    p.source = source;
    p.run_id = run.id;
    p.run_name = run.name;
    p.created_at = run.created_at;
    p.workload = run.workload;
    // A check's two builds of a config are two points of the config's one
    // series, each named by its build's label.
    p.config = without_build(c.config);
    p.config_index = c.config_index;
    p.unit = c.unit;
    p.throughput = *throughput;
    p.repeat_medians = g->second.medians;
    p.machine = join_distinct(g->second.machines, " + ");
    p.plugin_path = join_distinct(g->second.paths);
    p.plugin_hash = join_distinct(g->second.hashes);
    p.versions.torch = join_distinct(g->second.torch);
    p.versions.cuda = join_distinct(g->second.cuda);
    p.versions.driver = join_distinct(g->second.driver);
    p.versions.gpusweep = join_distinct(g->second.gpusweep);
    p.versions.build = join_distinct(g->second.builds);
    p.versions.python = join_distinct(g->second.python);
    for (const auto& [name, versions] : g->second.packages) {
      p.versions.packages[name] = join_distinct(versions);
    }
    if (const auto b = c.config.find(kBuildKey); b != c.config.end() && spec.check) {
      const std::string label = spec.check->build(b->get<std::string>()).label;
      if (!label.empty()) p.versions.build = label + " (" + p.versions.build + ")";
    }
    out.push_back(std::move(p));
  }
}

// The interval and standard error over a point's repeats.
void set_interval(HistoryPoint& p) {
  const LogSummary s = log_summary(p.repeat_medians);
  p.low = s.low;
  p.high = s.high;
  p.log_se = s.log_se;
}

// "what before -> after" for each field that differs from the previous point.
std::vector<std::string> changes_between(const HistoryVersions& before,
                                         const HistoryVersions& after) {
  const std::vector<std::tuple<const char*, const std::string*, const std::string*>> fields = {
      {"build", &before.build, &after.build},
      {"torch", &before.torch, &after.torch},
      {"CUDA", &before.cuda, &after.cuda},
      {"driver CUDA", &before.driver, &after.driver},
      {"gpusweep", &before.gpusweep, &after.gpusweep},
      {"python", &before.python, &after.python}};
  std::vector<std::string> out;
  auto changed = [&out](const std::string& name, const std::string& b, const std::string& a) {
    if (b == a) return;
    out.push_back(name + " " + (b.empty() ? "none" : b) + " -> " + (a.empty() ? "none" : a));
  };
  for (const auto& [name, b, a] : fields) changed(name, *b, *a);
  // A package either point lacks is a change only where both name some:
  // a point recorded before packages were gives no word on them.
  if (!before.packages.empty() && !after.packages.empty()) {
    std::map<std::string, std::pair<std::string, std::string>> both;
    for (const auto& [name, version] : before.packages) both[name].first = version;
    for (const auto& [name, version] : after.packages) both[name].second = version;
    for (const auto& [name, versions] : both) changed(name, versions.first, versions.second);
  }
  return out;
}

void analyse(HistorySeries& s, const ChangePointOptions& options) {
  std::stable_sort(s.points.begin(), s.points.end(), [](const auto& a, const auto& b) {
    return std::tie(a.created_at, a.source, a.run_id) < std::tie(b.created_at, b.source, b.run_id);
  });
  std::vector<SeriesPoint> values;
  for (size_t i = 0; i < s.points.size(); ++i) {
    HistoryPoint& p = s.points[i];
    set_interval(p);
    if (i > 0) p.changes = changes_between(s.points[i - 1].versions, p.versions);
    values.push_back({std::log(p.throughput), p.log_se});
  }
  s.too_short = s.points.size() < 2 * options.min_segment;
  s.change_points = find_change_points(values, options);
  for (const auto& cp : s.change_points) s.points[cp.index].change_point = cp;
}

// The settings whose values differ between the points of each workload
// (of `workload` alone unless "").
std::map<std::string, std::vector<std::string>> varying_settings(
    const std::vector<HistoryPoint>& points, const std::string& workload) {
  std::map<std::string, const Json*> first;
  std::map<std::string, std::set<std::string>> keys;
  for (const auto& p : points) {
    if (!workload.empty() && p.workload != workload) continue;
    const auto [it, inserted] = first.emplace(p.workload, &p.config);
    std::set<std::string>& k = keys[p.workload];
    if (inserted) continue;
    for (const auto& [key, value] : p.config.items()) {
      if (!it->second->contains(key) || (*it->second)[key] != value) k.insert(key);
    }
    for (const auto& [key, value] : it->second->items()) {
      if (!p.config.contains(key)) k.insert(key);
    }
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [workload, k] : keys) out[workload] = {k.begin(), k.end()};
  return out;
}

}  // namespace

// The software an environment row records: torch and gpusweep have columns
// of their own, CUDA's versions are in the runtime the worker reported.
HistoryVersions versions_of(const db::EnvironmentInfo& e) {
  HistoryVersions v;
  v.torch = e.torch_version;
  v.gpusweep = e.gpusweep_version;
  const Json details = Json::parse(e.details_json, nullptr, false);
  if (details.is_object() && details.contains("runtime") && details["runtime"].is_object()) {
    const auto runtime = RuntimeInfo::from_json(details["runtime"]);
    if (runtime.cuda) {
      v.cuda = runtime.cuda->torch_cuda.value_or("");
      v.driver = runtime.cuda->driver_cuda.value_or("");
    }
    if (runtime.python) v.python = *runtime.python;
    v.interpreter = runtime.python_interpreter.value_or("");
    if (const auto& p = runtime.python_packages; p && p->is_object()) {
      for (const auto& [name, version] : p->items()) {
        if (version.is_string()) v.packages[name] = version.get<std::string>();
      }
    }
  }
  return v;
}

std::string packages_text(const std::map<std::string, std::string>& packages, bool headline) {
  std::string out;
  size_t shown = 0;
  for (const char* name : kTrainingLibraries) {
    const auto it = packages.find(name);
    if (it == packages.end()) continue;
    out += (out.empty() ? "" : ", ") + it->first + " " + it->second;
    ++shown;
  }
  if (headline) {
    if (packages.size() > shown) {
      out += (out.empty() ? "" : ", +") + std::to_string(packages.size() - shown) + " more";
      if (shown == 0) out = std::to_string(packages.size()) + " packages";
    }
    return out;
  }
  for (const auto& [name, version] : packages) {
    if (std::find(std::begin(kTrainingLibraries), std::end(kTrainingLibraries), name) !=
        std::end(kTrainingLibraries)) {
      continue;
    }
    out += (out.empty() ? "" : ", ") + name + " " + version;
  }
  return out;
}

std::string history_since(const std::string& when) {
  static const std::regex form(R"(\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?)?)");
  if (!std::regex_match(when, form)) {
    throw UsageError("--since '" + when +
                     "': give a UTC date or time as the listing shows them, e.g. 2026-11-28 "
                     "or '2026-11-28 20:10'");
  }
  std::string since = when;
  if (since.size() > 10) since[10] = 'T';
  return since;
}

bool matches(const HistoryPoint& point, const HistoryFilter& filter) {
  if (!filter.workload.empty() && point.workload != filter.workload) return false;
  if (!filter.machine.empty() && point.machine.find(filter.machine) == std::string::npos) {
    return false;
  }
  if (!filter.since.empty() && point.created_at < filter.since) return false;
  for (const auto& [key, value] : filter.config.items()) {
    if (!point.config.contains(key) || point.config[key] != value) return false;
  }
  return true;
}

HistoryResult history_series(std::vector<HistoryPoint> points, const HistoryFilter& filter,
                             const ChangePointOptions& options) {
  // Keyed by workload, machine and the config's canonical JSON, as check
  // keys its pairs.
  std::map<std::tuple<std::string, std::string, std::string>, HistorySeries> keyed;
  HistoryResult out;
  out.varying = varying_settings(points, filter.workload);
  for (auto& p : points) {
    if (!matches(p, filter) || !(p.throughput > 0)) continue;
    HistorySeries& s = keyed[{p.workload, p.machine, canonical_json(p.config)}];
    if (s.points.empty()) {
      s.workload = p.workload;
      s.machine = p.machine;
      s.config = p.config;
      s.unit = p.unit;
    }
    s.points.push_back(std::move(p));
  }
  out.options = options;
  out.since = filter.since;
  for (auto& [key, s] : keyed) {
    analyse(s, options);
    out.series.push_back(std::move(s));
  }
  std::stable_sort(out.series.begin(), out.series.end(), [](const auto& a, const auto& b) {
    return std::tie(a.workload, a.machine, a.points.front().config_index) <
           std::tie(b.workload, b.machine, b.points.front().config_index);
  });
  return out;
}

std::vector<HistoryPoint> read_history(db::Store& store, const std::string& source,
                                       const std::string& workload) {
  std::map<int64_t, db::EnvironmentInfo> envs;
  for (auto& e : store.environments(std::nullopt)) envs[e.id] = std::move(e);
  std::vector<HistoryPoint> out;
  for (const auto& run : store.sweeps()) {
    if (run.status != db::SweepStatus::finished) continue;
    if (!workload.empty() && run.workload != workload) continue;
    if (!db::measures_configs(run.kind)) continue;  // diagnose's and tune-batch's probes
    read_run(store, run, source, envs, out);
  }
  return out;
}

}  // namespace gpusweep::host
