// `gpusweep history`'s output: each series of a workload's runs with its
// change points and the environment's changes marked, in the listing
// formats (table and md a section a series; csv a row a point; json the
// series with their points).
#pragma once

#include "analysis/history.hpp"
#include "report/output.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace gpusweep::host {

// The series as a JSON document: the method and its settings, then each
// series with its change points and points.
nlohmann::json history_json(const HistoryResult& result);

std::string history_listing(const HistoryResult& result, OutputFormat format);

}  // namespace gpusweep::host
