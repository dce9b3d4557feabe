// The results table; see results.hpp.
#include "report/results.hpp"
#include "report/trial_row.hpp"

#include "analysis/compare.hpp"
#include "analysis/history.hpp"
#include "analysis/stored.hpp"
#include "report/compare_view.hpp"
#include "spec/manifest.hpp"
#include "spec/stats.hpp"
#include "support/error.hpp"

#include "report/output.hpp"
#include "support/descriptive.hpp"
#include "support/format.hpp"

#include <cmath>
#include <map>
#include <unordered_map>

namespace gpusweep::host {

std::map<int64_t, ConfigFigures> config_figures(db::Store& store, const db::SweepRecord& sweep,
                                                const std::vector<StoredTrial>& trials) {
  const SweepSpec spec = stored_spec(sweep);
  const auto configs = gather_configs(store, sweep.id, trials, true, rounds_for(spec, false));
  std::vector<ComparisonRow> rows;
  try {
    rows = compare_configs(configs, options_for(spec));
  } catch (const UsageError&) {
    return {};  // a baseline that matches no config: nothing to compare with
  }
  const ConfigSamples* base = nullptr;
  for (const auto& r : rows) {
    if (r.baseline) base = r.config;
  }
  std::map<int64_t, ConfigFigures> out;
  const auto records = comparison_records(rows, {});
  for (size_t i = 0; i < rows.size(); ++i) {
    ConfigFigures& f = out[rows[i].config->config_index];
    f.compared = records[i];
    if (base == nullptr || base->ok == 0) continue;
    for (const auto& [repeat, log_ratio] : repeat_log_ratios(base->runs, rows[i].config->runs)) {
      f.by_repeat[repeat] = std::exp(log_ratio);
    }
  }
  return out;
}

namespace {

// What the monitor could not measure about a trial, as a note for its row:
// a measured window that held no NVML driver sample, where the utilisation
// figure is missing or rests on the host's coarser polls; "" when none.
std::string monitor_note(const HostStatValues& s) {
  if (!s.monitor_gpu_util_window_too_short) return "";
  return "GPU utilisation: measured window " + fixed(*s.monitor_gpu_util_window_too_short, 2) +
         " s held no NVML sample" +
         (s.monitor_gpu_util_sample_period_s
              ? " (driver period " + fixed(*s.monitor_gpu_util_sample_period_s, 2) + " s)"
              : std::string());
}

// The trial's own fields a result record holds (trial_row.hpp's names).
const std::vector<TrialField> kResultFields = {TrialField::config,
                                               TrialField::repeat,
                                               TrialField::trial_id,
                                               TrialField::status,
                                               TrialField::error,
                                               TrialField::unit,
                                               TrialField::throughput_median,
                                               TrialField::throughput_cv,
                                               TrialField::step_time_median_s,
                                               TrialField::peak_memory_bytes,
                                               TrialField::quality,
                                               TrialField::quality_reference};

// One record per trial: its settings that vary, status, summary, ratio to
// base, its time to a measure.target (`target`: the run has one), and its
// monitor note.
std::vector<Json> result_records(const std::vector<const StoredTrial*>& sorted,
                                 const std::vector<std::string>& keys,
                                 const std::map<int64_t, ConfigFigures>& figures, bool target) {
  std::vector<Json> records;
  records.reserve(sorted.size());
  // A config's settings, parsed once for its repeats (rows come by config).
  Json settings;
  int64_t parsed = -1;
  for (const auto* st : sorted) {
    const db::TrialRecord* t = &st->row;
    if (t->plan.config_index != parsed || settings.is_null()) {
      const Json config = Json::parse(t->plan.config_json);
      settings = Json::object();
      for (const auto& k : keys) settings[k] = config.contains(k) ? config.at(k) : Json();
      parsed = t->plan.config_index;
    }
    Json r = settings;
    const TrialRow row(*t);
    for (const auto f : kResultFields) r[field_name(f)] = row.value(f);
    if (t->summary) r["noisy"] = t->summary->throughput_cv > kNoisyCv;
    r["ratio"] = Json();
    if (const auto f = figures.find(t->plan.config_index); f != figures.end()) {
      const Json& c = f->second.compared;
      if (const auto rr = f->second.by_repeat.find(t->plan.repeat);
          rr != f->second.by_repeat.end() && t->summary) {
        r["ratio"] = rr->second;
      }
      r["config_throughput"] = c.at("throughput_median");
      r["config_ratio"] = c.at("baseline").get<bool>() && c.at("trials_ok").get<int64_t>() > 0
                              ? Json(1.0)
                              : c.at("ratio");
      r["config_ci_low"] = c.at("ci_low");
      r["config_ci_high"] = c.at("ci_high");
      r["config_verdict"] = c.at("verdict");
      r["config_notes"] = c.at("notes");
    }
    if (const auto time = target ? st->target() : std::nullopt) {
      r[host_stat::target_time_s] = time->time_s;
      r[host_stat::target_censored] = time->censored;
    }
    if (std::string note = monitor_note(st->stats); !note.empty()) r["monitor_note"] = note;
    // The step's FLOPs at its throughput, and their share of its device's
    // matmul peak, where the workload counted them (the script workload).
    const auto achieved = st->achieved_flops();
    const auto peak = st->peak_flops();
    r["achieved_flops"] = json_or_null(achieved);
    r["mfu"] = achieved && peak ? Json(*achieved / *peak) : Json();
    records.push_back(std::move(r));
  }
  return records;
}

// The machine formats' columns after the shared ones, named by their keys.
void add_machine_columns(std::vector<Column>& cols, bool flops) {
  for (const char* k :
       {"trial_id", "unit", "quality_reference", "noisy", "error", "config_throughput",
        "config_ratio", "config_ci_low", "config_ci_high", "config_verdict", "config_notes"}) {
    cols.push_back({k, k, false, {}});
  }
  // After the old columns, so that a reader of them by position keeps working.
  if (flops) {
    cols.push_back({"achieved_flops", "achieved_flops", true, {}});
    cols.push_back({"mfu", "mfu", true, {}});
  }
}

std::vector<Column> result_columns(const std::vector<std::string>& keys, bool repeats,
                                   OutputFormat format, bool target, bool flops) {
  auto get = [](const Json& r, const char* k) { return r.contains(k) ? r.at(k) : Json(); };
  std::vector<Column> cols = {{"config", "config", true, {}}};
  for (const auto& k : keys) {
    cols.push_back({k, k, false, [k](const Json& r) { return value_text(r.at(k)); }});
  }
  if (repeats || format != OutputFormat::table) cols.push_back({"repeat", "repeat", true, {}});
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
  const bool table = format == OutputFormat::table || format == OutputFormat::md;
  if (flops && table) cols.push_back({"achieved_flops", "FLOP/s", true, flops_text});
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
    cols.push_back({host_stat::target_time_s, "to target", true, [get](const Json& r) {
                      const Json v = get(r, host_stat::target_time_s);
                      if (v.is_null()) return std::string("-");
                      // Censored: the training it had, a lower bound.
                      return (get(r, host_stat::target_censored) == true ? "> " : "") +
                             human_seconds(v.get<double>());
                    }});
    if (format != OutputFormat::table && format != OutputFormat::md) {
      cols.push_back({host_stat::target_censored, host_stat::target_censored, false, {}});
    }
  }
  if (format == OutputFormat::table || format == OutputFormat::md) {
    cols.push_back({"note", "note", false, [get](const Json& r) {
                      std::string note;
                      if (get(r, "noisy") == true) {
                        note = "noisy: cv > " + fixed(100 * kNoisyCv, 0) + "%";
                      } else if (const Json e = get(r, "error"); !e.is_null()) {
                        note = truncate(e.get<std::string>(), 70) + " (results --trial " +
                               std::to_string(r.at("trial_id").get<int64_t>()) + ")";
                      }
                      const Json monitor = get(r, "monitor_note");
                      if (monitor.is_string()) {
                        note += (note.empty() ? "" : "; ") + monitor.get<std::string>();
                      }
                      return note;
                    }});
  } else {
    add_machine_columns(cols, flops);
  }
  return cols;
}

}  // namespace

RunResults read_results(db::Store& store, const db::SweepRecord& sweep) {
  RunResults r;
  r.trials = stored_trials(store, sweep.id, db::TrialFields::all);
  r.figures = config_figures(store, sweep, r.trials);
  return r;
}

std::string results_table(const db::SweepRecord& sweep, const RunResults& run,
                          OutputFormat format) {
  const auto& figures = run.figures;
  const SweepSpec spec = stored_spec(sweep);
  const auto keys = varying_keys(spec);
  const bool repeats = spec.measure.repeats > 1;

  // Rows in config order, repeats together, so that a grid reads naturally.
  std::vector<const StoredTrial*> sorted;
  for (const auto& t : run.trials) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) {
    return std::make_pair(a->row.plan.config_index, a->row.plan.repeat) <
           std::make_pair(b->row.plan.config_index, b->row.plan.repeat);
  });
  const bool flops = std::any_of(run.trials.begin(), run.trials.end(), [](const StoredTrial& t) {
    return t.achieved_flops().has_value();
  });
  const std::vector<Column> cols =
      result_columns(keys, repeats, format, spec.measure.target.has_value(), flops);
  const std::string listing = render_chunks(
      sorted.size(),
      [&](size_t begin, size_t end) {
        return result_records({sorted.begin() + static_cast<std::ptrdiff_t>(begin),
                               sorted.begin() + static_cast<std::ptrdiff_t>(end)},
                              keys, figures, spec.measure.target.has_value());
      },
      cols, format);
  if (format != OutputFormat::table) return listing;

  std::string out = "sweep '" + sweep.name + "' (run " + std::to_string(sweep.id) + ", " +
                    sweep.workload + ", " + db::sweep_status_name(sweep.status) + ", " +
                    sweep.created_at + ")\n";
  out += listing;
  bool base_ok = false;
  for (const auto& [index, f] : figures) {
    base_ok = base_ok || (f.compared.at("baseline").get<bool>() &&
                          f.compared.at("trials_ok").get<int64_t>() > 0);
  }
  std::string base_label = "config 1 (the sweep names no baseline)";
  if (!spec.baseline.empty()) {
    std::vector<std::string> k;
    for (const auto& [key, v] : spec.baseline.items()) k.push_back(key);
    base_label = config_label(spec.baseline, k);
  }
  out += "baseline: " + base_label + (base_ok ? "" : " (no ok trial: no ratios)") +
         "; vs base: each repeat's ratio to the baseline's same repeat, blocks paired (compare "
         "gives each config's)\n";
  return out;
}

std::string trial_details(const db::SweepRecord& sweep, const db::TrialRecord& t,
                          const db::EnvironmentInfo* environment) {
  std::string out = "trial " + std::to_string(t.id) + " of sweep '" + sweep.name + "' (run " +
                    std::to_string(sweep.id) + "): config " +
                    std::to_string(t.plan.config_index + 1) + ", repeat " +
                    std::to_string(t.plan.repeat + 1) + "\n";
  out += "settings: " + t.plan.config_json + "\n";
  out += std::string("status:   ") + db::status_name(t.status) + "\n";
  if (t.error) out += "error:    " + *t.error + "\n";
  if (t.summary) {
    out += "throughput " + human_rate(t.summary->throughput_median, t.summary->unit);
    if (t.summary->secondary_throughput_median && !t.summary->secondary_unit.empty()) {
      out += ", " + human_rate(*t.summary->secondary_throughput_median, t.summary->secondary_unit);
    }
    out += " (median of its blocks)\n";
  }
  if (environment != nullptr) {
    const HistoryVersions v = versions_of(*environment);
    if (!v.python.empty()) {
      out += "python:   " + v.python +
             (v.interpreter.empty() ? std::string() : " (" + v.interpreter + ")") + "\n";
    }
    if (!v.packages.empty()) out += "packages: " + packages_text(v.packages, false) + "\n";
  }
  if (t.stderr_tail && !t.stderr_tail->empty()) {
    out += "\nits log (stderr, the last part kept):\n" + *t.stderr_tail;
    if (out.back() != '\n') out += "\n";
  } else if (t.status != db::TrialStatus::ok) {
    out += "its log (stderr) was empty\n";
  }
  return out;
}

}  // namespace gpusweep::host
