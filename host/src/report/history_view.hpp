// `gpusweep history`'s output: each series of a workload's runs with its
// change points and the environment's changes marked, in the listing
// formats (table and md a section a series; csv a row a point; json the
// series with their points).
#pragma once

#include "analysis/history.hpp"
#include "report/output.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace gpusweep::host {

// How change points are found, and what a point's interval is.
extern const char* const kHistoryMethod;
extern const char* const kHistoryInterval;

// The series as a JSON document: the method and its settings, then each
// series with its change points and points.
nlohmann::json history_json(const HistoryResult& result);

std::string history_listing(const HistoryResult& result, OutputFormat format);

// The parts of a series' section, for the HTML page (history_page.hpp):
// the settings that name the series ("its one config" when none vary).
std::string history_series_label(const HistoryResult& result, const HistorySeries& s);
// "0.900x, split p <0.0001": a change point's new level over the old and the
// t-test's p on the split the search chose. The search picked that split
// because it looked like a change, so the p is not calibrated: stationary
// series of 100 runs show a false change point printed at p < 1e-5 in
// about 3% of them. The listing says so beside it.
std::string history_change_text(const ChangePoint& cp);
// The largest p-value a change point may have, as the views print it:
// "0.001", "1e-09".
std::string max_p_text(const ChangePointOptions& options);
// The lines under series i's title: the first point's software, and its
// change points (or why it has none).
std::vector<std::string> history_notes(const HistoryResult& result, size_t i);
// Series i's points as the table format shows them.
TextTable history_table(const HistoryResult& result, size_t i);

}  // namespace gpusweep::host
