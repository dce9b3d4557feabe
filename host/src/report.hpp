// `gpusweep report --html`: one self-contained HTML file (inline CSS and SVG,
// no scripts, no network) with the sweep's charts and tables.
#pragma once

#include <gpusweep/db/store.hpp>

#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

// Renders the report of one sweep run. Every chart is an <svg data-chart=NAME>
// whose data points carry class "mark" (tests count them).
std::string render_report(db::Store& store, const db::SweepRecord& sweep);

// For (peak memory, throughput) points: whether each is on the Pareto front,
// that is no other point has less or equal memory and more throughput, or
// less memory and equal throughput.
std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& memory_throughput);

// Escapes text for HTML element content and attribute values.
std::string html_escape(const std::string& text);

}  // namespace gpusweep::host
