// One trial as results, export and serve list it: the fields the three
// share, each under one name, configs and repeats counted from 1. Each
// listing names the fields it shows; TrialRow gives their values.
#pragma once

#include <gpusweep/db/store.hpp>

#include <nlohmann/json.hpp>

#include <vector>

namespace gpusweep::host {

enum class TrialField {
  trial_id,
  config,  // from 1
  repeat,  // from 1
  status,
  error,
  wall_s,
  unit,
  throughput_median,
  throughput_mean,
  throughput_min,
  throughput_max,
  throughput_iqr,
  throughput_cv,
  step_time_median_s,
  peak_memory_bytes,
  input_wait_fraction,
  quality_metric,
  quality,
  quality_reference,
  // export's numbering before the listings shared one, from 0: kept as
  // aliases for a release (docs/results.md).
  config_index,
  repeat_index,
};

// The field's name in every listing ("trial_id", "throughput_median", ...).
const char* field_name(TrialField f);
std::vector<std::string> field_names(const std::vector<TrialField>& fields);

class TrialRow {
 public:
  explicit TrialRow(const db::TrialRecord& t) : t_(&t) {}
  // The field's value; null where the trial has none (a summary's fields
  // of a trial that did not finish ok).
  nlohmann::json value(TrialField f) const;
  std::vector<nlohmann::json> values(const std::vector<TrialField>& fields) const;

 private:
  const db::TrialRecord* t_;
};

}  // namespace gpusweep::host
