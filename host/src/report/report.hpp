// `gpusweep report --html`: one self-contained HTML file (inline CSS and SVG,
// no scripts, no network) with the sweep's charts and tables; and the tables
// it shares with serve's page, made as compare and best make them.
#pragma once

#include "analysis/compare.hpp"
#include "report/output.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <string>
#include <utility>
#include <vector>

namespace gpusweep::host {

// Renders the report of one sweep run. Every chart is an <svg data-chart=NAME>
// whose data points carry class "mark" (tests count them). Its one <style>
// holds report_css() and nothing else sets a style: a policy that allows that
// text by hash styles it whole.
std::string render_report(db::Store& store, const db::SweepRecord& sweep,
                          bool selection_data = false);

// The text of the report's <style>.
const std::string& report_css();

// Escapes text for HTML element content and attribute values.
std::string html_escape(const std::string& text);

// compare's table, each cell as `gpusweep compare` prints it (its note
// column included, and the notes it says once under the table in the
// footer), the config's column headed "config".
TextTable comparison_table(const std::vector<ComparisonRow>& rows,
                           const std::vector<std::string>& keys);

// compare's knob table ("which knob matters", analysis' ablation()).
TextTable knob_table(const std::vector<AblationRow>& knobs);
// What the knob table's columns mean.
extern const char* const kKnobLegend;

// What `gpusweep best` prints for the run with its defaults (objective
// throughput, or time to target on a run with measure.target; no
// constraints), from its configs as gather_configs read them in `rounds`.
std::string best_pick(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                      const std::vector<ConfigSamples>& configs, Rounds rounds);

}  // namespace gpusweep::host
