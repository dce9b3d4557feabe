// A trial's shared fields; see trial_row.hpp.
#include "report/trial_row.hpp"

#include "report/output.hpp"

namespace gpusweep::host {

using Json = nlohmann::json;

const char* field_name(TrialField f) {
  switch (f) {
    case TrialField::trial_id:
      return "trial_id";
    case TrialField::config:
      return "config";
    case TrialField::repeat:
      return "repeat";
    case TrialField::status:
      return "status";
    case TrialField::error:
      return "error";
    case TrialField::wall_s:
      return "wall_s";
    case TrialField::unit:
      return "unit";
    case TrialField::throughput_median:
      return "throughput_median";
    case TrialField::throughput_mean:
      return "throughput_mean";
    case TrialField::throughput_min:
      return "throughput_min";
    case TrialField::throughput_max:
      return "throughput_max";
    case TrialField::throughput_iqr:
      return "throughput_iqr";
    case TrialField::throughput_cv:
      return "throughput_cv";
    case TrialField::step_time_median_s:
      return "step_time_median_s";
    case TrialField::peak_memory_bytes:
      return "peak_memory_bytes";
    case TrialField::input_wait_fraction:
      return "input_wait_fraction";
    case TrialField::quality_metric:
      return "quality_metric";
    case TrialField::quality:
      return "quality";
    case TrialField::quality_reference:
      return "quality_reference";
    case TrialField::config_index:
      return "config_index";
    case TrialField::repeat_index:
      return "repeat_index";
  }
  return "?";
}

std::vector<std::string> field_names(const std::vector<TrialField>& fields) {
  std::vector<std::string> out;
  out.reserve(fields.size());
  for (const auto f : fields) out.emplace_back(field_name(f));
  return out;
}

Json TrialRow::value(TrialField f) const {
  const db::TrialRecord& t = *t_;
  switch (f) {
    case TrialField::trial_id:
      return t.id;
    case TrialField::config:
      return t.plan.config_index + 1;
    case TrialField::repeat:
      return t.plan.repeat + 1;
    case TrialField::status:
      return db::status_name(t.status);
    case TrialField::error:
      return json_or_null(t.error);
    case TrialField::wall_s:
      return json_or_null(t.wall_s);
    case TrialField::config_index:
      return t.plan.config_index;
    case TrialField::repeat_index:
      return t.plan.repeat;
    default:
      break;
  }
  if (!t.summary) return nullptr;
  const db::Summary& s = *t.summary;
  switch (f) {
    case TrialField::unit:
      return s.unit;
    case TrialField::throughput_median:
      return s.throughput_median;
    case TrialField::throughput_mean:
      return s.throughput_mean;
    case TrialField::throughput_min:
      return s.throughput_min;
    case TrialField::throughput_max:
      return s.throughput_max;
    case TrialField::throughput_iqr:
      return s.throughput_iqr;
    case TrialField::throughput_cv:
      return s.throughput_cv;
    case TrialField::step_time_median_s:
      return s.step_time_median_s;
    case TrialField::peak_memory_bytes:
      return json_or_null(s.peak_memory_bytes);
    case TrialField::input_wait_fraction:
      return json_or_null(s.input_wait_fraction);
    case TrialField::quality_metric:
      return json_or_null(s.quality_metric);
    case TrialField::quality:
      return json_or_null(s.quality);
    case TrialField::quality_reference:
      return json_or_null(s.quality_reference);
    default:
      return nullptr;
  }
}

std::vector<Json> TrialRow::values(const std::vector<TrialField>& fields) const {
  std::vector<Json> out;
  out.reserve(fields.size());
  for (const auto f : fields) out.push_back(value(f));
  return out;
}

}  // namespace gpusweep::host
