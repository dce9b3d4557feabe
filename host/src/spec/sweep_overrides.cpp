// --set overrides of a sweep file (apply_overrides): the name, the
// workload, a measurement setting, or a setting pinned in base.
#include "spec/sweep_internal.hpp"

#include "support/error.hpp"

namespace gpusweep::host {

using detail::parse_measure;

void apply_overrides(SweepSpec& spec, const std::vector<std::string>& sets) {
  for (const auto& set : sets) {
    try {
      (void)Json(set).dump();
    } catch (const Json::type_error&) {
      throw UsageError("--set " + Json(set).dump(-1, ' ', false, Json::error_handler_t::replace) +
                       ": not valid UTF-8 text; write the key and value in UTF-8");
    }
    const auto eq = set.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--set " + set + ": expected key=value (for example --set batch_size=128)");
    }
    const std::string key = set.substr(0, eq);
    const std::string text = set.substr(eq + 1);
    if (key == "name" || key == "workload") {
      (key == "name" ? spec.name : spec.workload) = text;
    } else if (key.rfind("measure.", 0) == 0) {
      Json m = spec.measure.to_json();
      // A block's length given one way replaces the other way's.
      if (key == "measure.steps_per_block") m.erase("block_s");
      if (key == "measure.block_s") m.erase("steps_per_block");
      m[key.substr(8)] = parse_cli_value(text);
      spec.measure = parse_measure("--set", m);
    } else {
      spec.base[key] = parse_cli_value(text);
      spec.grid.erase(key);
      spec.overridden.push_back(key);
    }
  }
}

}  // namespace gpusweep::host
