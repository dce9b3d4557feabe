// The results table; see results.hpp.
#include "report/results.hpp"

#include "analysis/compare.hpp"
#include "analysis/stored.hpp"

#include "report/output.hpp"
#include "support/format.hpp"
#include "support/stats.hpp"

#include <map>
#include <unordered_map>

namespace gpusweep::host {

std::optional<double> baseline_throughput(const SweepSpec& spec,
                                          const std::vector<db::TrialRecord>& trials) {
  std::vector<double> values;
  // Whether each config is the baseline, decided once for its repeats.
  std::unordered_map<int64_t, bool> base;
  for (const auto& t : trials) {
    if (t.status != db::TrialStatus::ok || !t.summary) continue;
    auto it = base.find(t.plan.config_index);
    if (it == base.end()) {
      const Json config = Json::parse(t.plan.config_json);
      it =
          base.emplace(t.plan.config_index, is_baseline(spec.baseline, t.plan.config_index, config))
              .first;
    }
    if (it->second) values.push_back(t.summary->throughput_median);
  }
  if (values.empty()) return std::nullopt;
  return quantile(values, 0.5);
}

namespace {

// One record per trial: its settings that vary, status, summary, ratio to base.
std::vector<Json> result_records(const std::vector<const db::TrialRecord*>& sorted,
                                 const std::vector<std::string>& keys,
                                 const std::optional<double>& base,
                                 const std::map<int64_t, TargetTime>& targets,
                                 const std::map<int64_t, std::string>& notes) {
  std::vector<Json> records;
  records.reserve(sorted.size());
  // A config's settings, parsed once for its repeats (rows come by config).
  Json settings;
  int64_t parsed = -1;
  for (const auto* t : sorted) {
    if (t->plan.config_index != parsed || settings.is_null()) {
      const Json config = Json::parse(t->plan.config_json);
      settings = Json::object();
      for (const auto& k : keys) settings[k] = config.contains(k) ? config.at(k) : Json();
      parsed = t->plan.config_index;
    }
    Json r = settings;
    r["config"] = t->plan.config_index + 1;
    r["repeat"] = t->plan.repeat + 1;
    r["trial_id"] = t->id;
    r["status"] = t->status;
    r["error"] = json_or_null(t->error);
    if (t->summary) {
      const auto& s = *t->summary;
      r["unit"] = s.unit;
      r["throughput_median"] = s.throughput_median;
      r["throughput_cv"] = s.throughput_cv;
      r["noisy"] = s.throughput_cv > kNoisyCv;
      r["step_time_median_s"] = s.step_time_median_s;
      r["peak_memory_bytes"] = json_or_null(s.peak_memory_bytes);
      r["quality"] = json_or_null(s.quality);
      r["quality_reference"] = json_or_null(s.quality_reference);
      r["ratio"] = base && *base > 0 ? Json(s.throughput_median / *base) : Json();
    }
    if (auto it = targets.find(t->id); it != targets.end()) {
      r["target_time_s"] = it->second.time_s;
      r["target_censored"] = it->second.censored;
    }
    if (auto it = notes.find(t->id); it != notes.end()) r["monitor_note"] = it->second;
    records.push_back(std::move(r));
  }
  return records;
}

std::vector<Column> result_columns(const std::vector<std::string>& keys, bool repeats,
                                   OutputFormat format, bool target) {
  auto get = [](const Json& r, const char* k) { return r.contains(k) ? r.at(k) : Json(); };
  std::vector<Column> cols = {{"config", "#", true, {}}};
  for (const auto& k : keys) {
    cols.push_back({k, k, false, [k](const Json& r) {
                      const Json& v = r.at(k);
                      return v.is_string() ? v.get<std::string>() : v.dump();
                    }});
  }
  if (repeats || format != OutputFormat::table) cols.push_back({"repeat", "rep", true, {}});
  cols.push_back({"status", "status", false, {}});
  cols.push_back({"throughput_median", "throughput", true, [get](const Json& r) {
                    const Json v = get(r, "throughput_median");
                    return v.is_null()
                               ? std::string("-")
                               : human_rate(v.get<double>(), r.at("unit").get<std::string>());
                  }});
  cols.push_back({"throughput_cv", "cv", true, [get](const Json& r) {
                    const Json v = get(r, "throughput_cv");
                    return v.is_null() ? std::string("-") : fixed(100 * v.get<double>(), 1) + "%";
                  }});
  cols.push_back({"step_time_median_s", "step time", true, [get](const Json& r) {
                    const Json v = get(r, "step_time_median_s");
                    return v.is_null() ? std::string("-") : human_seconds(v.get<double>());
                  }});
  cols.push_back({"peak_memory_bytes", "peak mem", true, [get](const Json& r) {
                    const Json v = get(r, "peak_memory_bytes");
                    return v.is_null() ? std::string("-") : human_bytes(v.get<double>());
                  }});
  cols.push_back({"quality", "quality", true, [get](const Json& r) {
                    const Json q = get(r, "quality");
                    if (q.is_null()) return std::string("-");
                    std::string s = human_count(q.get<double>());
                    const Json ref = get(r, "quality_reference");
                    if (!ref.is_null()) s += " (ref " + human_count(ref.get<double>()) + ")";
                    return s;
                  }});
  cols.push_back({"ratio", "vs base", true, [get](const Json& r) {
                    const Json v = get(r, "ratio");
                    return v.is_null() ? std::string("-") : fixed(v.get<double>(), 2) + "x";
                  }});
  if (target) {
    cols.push_back({"target_time_s", "to target", true, [get](const Json& r) {
                      const Json v = get(r, "target_time_s");
                      if (v.is_null()) return std::string("-");
                      // Censored: the training it had, a lower bound.
                      return (get(r, "target_censored") == true ? "> " : "") +
                             human_seconds(v.get<double>());
                    }});
    if (format != OutputFormat::table && format != OutputFormat::md) {
      cols.push_back({"target_censored", "target_censored", false, {}});
    }
  }
  if (format == OutputFormat::table || format == OutputFormat::md) {
    cols.push_back({"note", "note", false, [get](const Json& r) {
                      std::string note;
                      if (get(r, "noisy") == true) {
                        note = "noisy: cv > " + fixed(100 * kNoisyCv, 0) + "%";
                      } else if (const Json e = get(r, "error"); !e.is_null()) {
                        note = truncate(e.get<std::string>(), 70);
                      }
                      const Json monitor = get(r, "monitor_note");
                      if (monitor.is_string()) {
                        note += (note.empty() ? "" : "; ") + monitor.get<std::string>();
                      }
                      return note;
                    }});
  } else {
    for (const char* k : {"trial_id", "unit", "quality_reference", "noisy", "error"}) {
      cols.push_back({k, k, false, {}});
    }
  }
  return cols;
}

}  // namespace

std::map<int64_t, TargetTime> trial_target_times(db::Store& store, const db::SweepRecord& sweep,
                                                 const std::vector<db::TrialRecord>& trials) {
  std::map<int64_t, TargetTime> out;
  if (!stored_spec(sweep).measure.target) return out;
  for (const auto& t : trials) {
    if (const auto time = stored_target_time(store, t)) out[t.id] = *time;
  }
  return out;
}

std::map<int64_t, std::string> trial_monitor_notes(db::Store& store, int64_t sweep_id) {
  std::map<int64_t, std::string> out;
  const auto stats = store.last_stats(
      sweep_id, {"monitor_gpu_util_window_too_short", "monitor_gpu_util_sample_period_s"});
  for (const auto& [id, v] : stats) {
    if (!v[0]) continue;
    out[id] = "GPU utilisation: measured window " + fixed(*v[0], 2) + " s held no NVML sample" +
              (v[1] ? " (driver period " + fixed(*v[1], 2) + " s)" : std::string());
  }
  return out;
}

std::string results_table(const db::SweepRecord& sweep, const std::vector<db::TrialRecord>& trials,
                          OutputFormat format, const std::map<int64_t, TargetTime>& targets,
                          const std::map<int64_t, std::string>& notes) {
  const SweepSpec spec = stored_spec(sweep);
  const auto keys = varying_keys(spec);
  const auto base = baseline_throughput(spec, trials);
  const bool repeats = spec.measure.repeats > 1;

  // Rows in config order, repeats together, so that a grid reads naturally.
  std::vector<const db::TrialRecord*> sorted;
  for (const auto& t : trials) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::make_pair(a->plan.config_index, a->plan.repeat) <
           std::make_pair(b->plan.config_index, b->plan.repeat);
  });
  const std::vector<Column> cols =
      result_columns(keys, repeats, format, spec.measure.target.has_value());
  const std::string listing = render_chunks(
      sorted.size(),
      [&](size_t begin, size_t end) {
        return result_records({sorted.begin() + static_cast<std::ptrdiff_t>(begin),
                               sorted.begin() + static_cast<std::ptrdiff_t>(end)},
                              keys, base, targets, notes);
      },
      cols, format);
  if (format != OutputFormat::table) return listing;

  std::string out = "sweep '" + sweep.name + "' (run " + std::to_string(sweep.id) + ", " +
                    sweep.workload + ", " + sweep.status + ", " + sweep.created_at + ")\n";
  out += listing;
  if (spec.baseline.empty()) {
    out += "baseline: config #1 (the sweep names no baseline)\n";
  } else {
    std::vector<std::string> k;
    for (const auto& [key, v] : spec.baseline.items()) k.push_back(key);
    out += "baseline: " + config_label(spec.baseline, k) +
           (base ? "" : " (no ok trial: ratios unavailable)") + "\n";
  }
  return out;
}

}  // namespace gpusweep::host
