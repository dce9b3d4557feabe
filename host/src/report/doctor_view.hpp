// `gpusweep doctor`'s text view of its findings.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gpusweep::host {

// doctor's findings (the document `doctor --format json` prints) as text.
std::string render_doctor(const nlohmann::json& doc, bool colour);

}  // namespace gpusweep::host
