// `gpusweep best`'s output: text for people, JSON for programs.
#pragma once

#include "analysis/best.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gpusweep::host {

// The winner with its metrics, its ratio to the baseline and the sweep-file
// snippet; or why there is none.
std::string render_best(const BestChoice& b, const std::string& sweep_name);

// The same as a JSON document ("best": null when nothing is eligible).
nlohmann::json best_json(const BestChoice& b, const std::string& sweep_name);

}  // namespace gpusweep::host
