// The export writer; see export.hpp.
#include "report/export.hpp"

#include "analysis/stored.hpp"
#include "spec/stats.hpp"

#include <cmath>

namespace gpusweep::host {

using Json = nlohmann::json;

int64_t write_export(db::Store& store, const db::SweepRecord& sweep, bool per_block,
                     OutputFormat format, std::ostream& out) {
  const auto trials = stored_trials(store, sweep.id, db::TrialFields::all);
  // Every setting of the plugin is a column, in a stable order.
  std::vector<std::string> settings;
  if (!trials.empty()) {
    const Json first = Json::parse(trials.front().row.plan.config_json);
    for (const auto& [k, v] : first.items()) settings.push_back(k);
  }
  std::vector<std::string> names = {"sweep",  "trial_id", "config_index",
                                    "repeat", "status",   "error"};
  names.insert(names.end(), settings.begin(), settings.end());
  if (per_block) {
    names.insert(names.end(), {"block", "steps", "seconds", "samples", "throughput"});
  } else {
    names.insert(names.end(), {"unit", "throughput_median", "throughput_mean", "throughput_min",
                               "throughput_max", "throughput_iqr", "throughput_cv",
                               "step_time_median_s", "peak_memory_bytes", "input_wait_fraction",
                               "quality_metric", "quality", "quality_reference", "wall_s"});
  }
  // A run with measure.target: each trial's time to it, and whether the
  // budget ended it first (censored: the time is then a lower bound).
  const Json spec = Json::parse(sweep.spec_json, nullptr, false);
  const bool target = !per_block && spec.is_object() && spec.contains("measure") &&
                      spec["measure"].is_object() && spec["measure"].contains("target");
  if (target) names.insert(names.end(), {host_stat::target_time_s, host_stat::target_censored});
  RecordWriter w(names, format == OutputFormat::csv, out);
  std::string row;
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
    std::vector<Json> cells = {sweep.name,    t.id,     t.plan.config_index,
                               t.plan.repeat, t.status, json_or_null(t.error)};
    const Json config = Json::parse(t.plan.config_json);
    for (const auto& s : settings) cells.push_back(config.contains(s) ? config.at(s) : Json());
    if (per_block) {
      const std::string trial_text = w.cells(cells);
      const size_t first = cells.size();
      for (const auto& b : store.blocks(t.id)) {
        row = trial_text;
        w.append_number(row, first, static_cast<double>(b.idx));
        w.append_number(row, first + 1, static_cast<double>(b.steps));
        w.append_number(row, first + 2, b.seconds);
        w.append_number(row, first + 3, b.samples);
        w.append_number(row, first + 4, b.seconds > 0 ? b.samples / b.seconds : NAN);
        w.emit(row);
      }
      continue;
    }
    if (t.summary) {
      const auto& m = *t.summary;
      cells.insert(cells.end(),
                   {m.unit, m.throughput_median, m.throughput_mean, m.throughput_min,
                    m.throughput_max, m.throughput_iqr, m.throughput_cv, m.step_time_median_s,
                    json_or_null(m.peak_memory_bytes), json_or_null(m.input_wait_fraction),
                    json_or_null(m.quality_metric), json_or_null(m.quality),
                    json_or_null(m.quality_reference), json_or_null(t.wall_s)});
    } else {
      cells.resize(names.size() - (target ? 3 : 1));
      cells.push_back(json_or_null(t.wall_s));
    }
    if (target) {
      const auto time = stored.target();
      cells.push_back(time ? Json(time->time_s) : Json());
      cells.push_back(time ? Json(time->censored) : Json());
    }
    w.emit(w.cells(cells));
  }
  return w.finish();
}

}  // namespace gpusweep::host
