// The tables the HTML report and serve's page share with the command line:
// compare's comparison and knob tables, and best's pick (report.hpp).
#include "report/report.hpp"

#include "analysis/best.hpp"
#include "analysis/time_to_target.hpp"
#include "report/best_view.hpp"
#include "report/compare_view.hpp"
#include "spec/manifest.hpp"
#include "support/format.hpp"

#include <cmath>
#include <map>

namespace gpusweep::host {

namespace {

// Text without the ANSI colours compare's note column adds on a terminal
// (serve's own stdout may be one).
std::string without_colour(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      const size_t end = text.find('m', i);
      if (end != std::string::npos) {
        i = end;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

}  // namespace

TextTable comparison_table(const std::vector<ComparisonRow>& rows,
                           const std::vector<std::string>& keys) {
  TextTable t = comparison_cells(rows, keys);
  for (auto& row : t.rows) {
    for (auto& cell : row) cell = without_colour(cell);
  }
  return t;
}

const char* const kKnobLegend =
    "Each value of a knob against the knob's first, the other knobs held at each of their "
    "values; ratio: the geometric mean over those pairs of configs; 95% CI: t over the repeats "
    "every pair ran, as compare's ratios; pairs range: the pairs' own ratios, apart when the "
    "knob's effect depends on the others.";

TextTable knob_table(const std::vector<AblationRow>& knobs) {
  TextTable t{{"knob", "from", "to", "pairs", "repeats", "ratio", "95% CI", "pairs range", "note"},
              {false, false, false, true, true, true, true, true, false},
              {},
              {}};
  for (const auto& k : knobs) {
    const bool range = k.pairs > 1 && std::isfinite(k.pair_min);
    t.rows.push_back({k.knob, value_text(k.from), value_text(k.to), std::to_string(k.pairs),
                      k.repeats > 0 ? std::to_string(k.repeats) : "-",
                      k.pairs > 0 ? fixed(k.ratio, 3) + "x" : "-", interval_text(k.low, k.high),
                      range ? fixed(k.pair_min, 3) + "-" + fixed(k.pair_max, 3) + "x" : "-",
                      k.note});
  }
  return t;
}

// As cmd_best reads the run with no options given: whole trial records
// (the brief ones gather_configs hands back lack the step time).
std::string best_pick(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                      const std::vector<ConfigSamples>& configs, Rounds rounds) {
  const Objective objective =
      spec.measure.target ? Objective::time_to_target : Objective::throughput;
  return render_best(best_of_run(store, sweep, spec, configs, rounds, objective), sweep.name);
}

}  // namespace gpusweep::host
