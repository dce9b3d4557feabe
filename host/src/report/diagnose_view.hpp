// `gpusweep diagnose`'s output: the phase table, the bottleneck and the
// suggested sweep; or all of it as one JSON document.
#pragma once

#include "analysis/diagnose.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gpusweep::host {

std::string render_diagnosis(const DiagnoseReport& r, const std::string& workload);

nlohmann::json diagnosis_json(const DiagnoseReport& r);

}  // namespace gpusweep::host
