// The export writer; see export.hpp.
#include "report/export.hpp"

#include "analysis/stored.hpp"
#include "report/trial_row.hpp"
#include "spec/stats.hpp"

#include <cmath>

namespace gpusweep::host {

using Json = nlohmann::json;

namespace {

// A trial's fields in export's columns (trial_row.hpp's names): first, the
// summary's (a row per trial), and last export's numbering from 0 as it was
// before the listings shared one.
const std::vector<TrialField> kLeadFields = {TrialField::trial_id, TrialField::config,
                                             TrialField::repeat, TrialField::status,
                                             TrialField::error};
const std::vector<TrialField> kSummaryFields = {TrialField::unit,
                                                TrialField::throughput_median,
                                                TrialField::throughput_mean,
                                                TrialField::throughput_min,
                                                TrialField::throughput_max,
                                                TrialField::throughput_iqr,
                                                TrialField::throughput_cv,
                                                TrialField::step_time_median_s,
                                                TrialField::peak_memory_bytes,
                                                TrialField::input_wait_fraction,
                                                TrialField::quality_metric,
                                                TrialField::quality,
                                                TrialField::quality_reference,
                                                TrialField::wall_s};
const std::vector<TrialField> kAliasFields = {TrialField::config_index, TrialField::repeat_index};

}  // namespace

int64_t write_export(db::Store& store, const db::SweepRecord& sweep, bool per_block,
                     OutputFormat format, std::ostream& out) {
  const auto trials = stored_trials(store, sweep.id, db::TrialFields::all);
  // Every setting of the plugin is a column, in a stable order.
  std::vector<std::string> settings;
  if (!trials.empty()) {
    const Json first = Json::parse(trials.front().row.plan.config_json);
    for (const auto& [k, v] : first.items()) settings.push_back(k);
  }
  std::vector<std::string> names = {"sweep"};
  for (const auto& n : field_names(kLeadFields)) names.push_back(n);
  names.insert(names.end(), settings.begin(), settings.end());
  if (per_block) {
    names.insert(names.end(), {"block", "steps", "seconds", "samples", "throughput"});
  } else {
    for (const auto& n : field_names(kSummaryFields)) names.push_back(n);
  }
  // A run with measure.target: each trial's time to it, and whether the
  // budget ended it first (censored: the time is then a lower bound).
  const Json spec = Json::parse(sweep.spec_json, nullptr, false);
  const bool target = !per_block && spec.is_object() && spec.contains("measure") &&
                      spec["measure"].is_object() && spec["measure"].contains("target");
  if (target) names.insert(names.end(), {host_stat::target_time_s, host_stat::target_censored});
  for (const auto& n : field_names(kAliasFields)) names.push_back(n);
  RecordWriter w(names, format == OutputFormat::csv, out);
  std::string row;
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
    const TrialRow trial(t);
    std::vector<Json> cells = {sweep.name};
    for (auto& v : trial.values(kLeadFields)) cells.push_back(std::move(v));
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
        w.append_number(row, first + 4, db::block_throughput(b).value_or(NAN));
        w.append_number(row, first + 5, static_cast<double>(t.plan.config_index));
        w.append_number(row, first + 6, static_cast<double>(t.plan.repeat));
        w.emit(row);
      }
      continue;
    }
    for (auto& v : trial.values(kSummaryFields)) cells.push_back(std::move(v));
    if (target) {
      const auto time = stored.target();
      cells.push_back(time ? Json(time->time_s) : Json());
      cells.push_back(time ? Json(time->censored) : Json());
    }
    for (auto& v : trial.values(kAliasFields)) cells.push_back(std::move(v));
    w.emit(w.cells(cells));
  }
  return w.finish();
}

}  // namespace gpusweep::host
