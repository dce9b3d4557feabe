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
std::string render_report(db::Store& store, const db::SweepRecord& sweep,
                          bool selection_data = false);

// Escapes text for HTML element content and attribute values.
std::string html_escape(const std::string& text);

}  // namespace gpusweep::host
