// The HTML report's sections (see report.hpp): its head and style, the
// charts' and the comparison's sections, the distributions, claims,
// environment and problems, a tune's race; and the HTML they are written
// with (escaping, tables).
#include "report/report.hpp"

#include "analysis/claims.hpp"
#include "analysis/history.hpp"
#include "analysis/tune_trials.hpp"
#include "report/compare_view.hpp"
#include "report/output.hpp"
#include "report/report_internal.hpp"
#include "report/tune_view.hpp"
#include "spec/sweep.hpp"
#include "spec/tune.hpp"
#include "support/descriptive.hpp"
#include "support/format.hpp"

#include <cmath>
#include <sstream>

namespace gpusweep::host {

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace detail {

constexpr const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232a;margin:0 auto;max-width:1100px;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
.meta{color:#57606a} table{border-collapse:collapse;margin:8px 0;font-size:13px} th,td{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.faster{color:#1a7f37;font-weight:600} .slower{color:#cf222e;font-weight:600} .noisy{color:#9a6700}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;font-size:12px}
svg{display:block;margin:8px 0;max-width:100%;height:auto} svg text{font:11px system-ui,sans-serif;fill:#1d232a} svg text.caption{fill:#57606a}
.axis{stroke:#8c959f;stroke-width:1} .grid{stroke:#eaeef2;stroke-width:1}
.bar{fill:#6e9bd1} .bar.base{fill:#8250df} .whisker{stroke:#1d232a;stroke-width:1.5} .one{stroke:#cf222e;stroke-dasharray:4 3}
.dot{fill:#6e9bd1;fill-opacity:.65} .pt{fill:#6e9bd1} .pt.front{fill:#1a7f37} .pt.base{fill:#8250df} .front-line{stroke:#1a7f37;stroke-width:1.5;fill:none}
.note{color:#57606a;font-size:12px} .ideal{stroke:#8c959f;stroke-dasharray:5 4} .scale-line{stroke:#6e9bd1;stroke-width:1.5}
.cp{stroke:#cf222e;stroke-width:1.5;stroke-dasharray:5 3} svg text.cp-label{fill:#cf222e} .level{stroke:#8c959f;stroke-width:1.5;stroke-dasharray:2 3} .env{fill:#9a6700}
.c0{color:#8250df} .c1{color:#1a7f37} .c2{color:#cf222e} .c3{color:#0969da} .c4{color:#9a6700} .c5{color:#bf3989} .c6{color:#1b7c83} .c7{color:#57606a}
@media print{body{max-width:none;padding:0} h2{break-after:avoid} svg,table{break-inside:avoid}}
)";

}  // namespace detail

const std::string& report_css() {
  static const std::string css = detail::kCss;
  return css;
}

namespace detail {

std::string table_html(const std::vector<std::string>& headers,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& numeric) {
  std::ostringstream s;
  s << "<table><thead><tr>";
  for (const auto& h : headers) s << "<th>" << html_escape(h) << "</th>";
  s << "</tr></thead><tbody>";
  for (const auto& r : rows) {
    s << "<tr>";
    for (size_t i = 0; i < r.size(); ++i) {
      const bool n = i < numeric.size() && numeric[i];
      std::string cls = n ? " class=\"n\"" : "";
      if (r[i] == "faster" || r[i] == "slower") cls = " class=\"" + r[i] + "\"";
      if (r[i] == "confirmed") cls = " class=\"faster\"";
      if (r[i] == "refuted") cls = " class=\"slower\"";
      s << "<td" << cls << ">" << html_escape(r[i]) << "</td>";
    }
    s << "</tr>";
  }
  s << "</tbody></table>";
  return s.str();
}

std::string header_html(const db::SweepRecord& sweep, const SweepSpec& spec, size_t trials) {
  std::ostringstream h;
  h << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<title>gpusweep: " << html_escape(sweep.name) << "</title><style>" << kCss
    << "</style></head><body>";
  h << "<h1>Sweep " << html_escape(sweep.name) << "</h1><p class=\"meta\">run " << sweep.id
    << " &middot; workload " << html_escape(sweep.workload) << " &middot; "
    << html_escape(db::sweep_status_name(sweep.status)) << " &middot; "
    << html_escape(sweep.created_at) << " &middot; " << trials << " trials";
  if (!spec.description.empty()) h << "<br>" << html_escape(spec.description);
  h << "<br>protocol: " << spec.measure.warmup_steps << " warmup steps, ";
  if (spec.measure.target) {
    h << "blocks of " << spec.measure.steps_per_block << " steps until the target, ";
  } else {
    h << spec.measure.blocks << " " << spec.measure.block_text() << ", ";
  }
  h << spec.measure.repeats << " repeat(s)</p>";

  return h.str();
}

std::string charts_html(const ChartData& d, const std::string& compare_problem) {
  std::ostringstream h;
  if (!compare_problem.empty()) {
    h << "<p class=\"note\">No comparison: " << html_escape(compare_problem) << "</p>";
  }
  h << "<h2>Throughput per config</h2><p class=\"note\">Median " << html_escape(d.unit)
    << "/s over blocks; whiskers: 95% interval of the geometric mean; the baseline in purple."
    << html_escape(d.note) << "</p>";
  h << bar_chart("throughput", d.labels, d.medians, d.lows, d.highs, d.is_base, d.unit + "/s",
                 std::nullopt);

  std::vector<std::string> ratio_labels;
  std::vector<double> rv, rl, rh;
  std::vector<bool> rb;
  for (size_t i = 0; i < d.labels.size(); ++i) {
    if (std::isnan(d.ratio[i])) continue;
    ratio_labels.push_back(d.labels[i]);
    rv.push_back(d.ratio[i]);
    rl.push_back(d.rlow[i]);
    rh.push_back(d.rhigh[i]);
    rb.push_back(d.is_base[i]);
  }
  h << "<h2>Speed-up against the baseline</h2><p class=\"note\">Ratio of geometric mean "
       "throughput with its 95% interval; the dashed line is 1x; the baseline in purple.</p>";
  h << bar_chart("speedup", ratio_labels, rv, rl, rh, rb, "x", 1.0);

  return h.str();
}

std::string comparison_html(const std::vector<ComparisonRow>& rows,
                            const std::vector<std::string>& keys, double max_quality_loss) {
  const TextTable t = comparison_table(rows, keys);
  std::string notes;
  for (const auto& line : t.footer) notes += "<p class=\"note\">" + html_escape(line) + "</p>";
  return "<h2>Against the baseline</h2><p class=\"note\">Each config as gpusweep compare "
         "shows it. " +
         html_escape(comparison_legend(max_quality_loss)) + "</p>" +
         table_html(t.headers, t.rows, t.numeric) + notes;
}

std::string knobs_html(const std::vector<AblationRow>& knobs) {
  if (knobs.empty()) return "";
  const TextTable t = knob_table(knobs);
  return "<h2>Which knob matters</h2><p class=\"note\">" + html_escape(kKnobLegend) + "</p>" +
         table_html(t.headers, t.rows, t.numeric);
}

std::string best_html(const std::string& pick) {
  return "<h2>Best's pick</h2><p class=\"note\">What gpusweep best picks on this run (no "
         "constraints).</p><pre data-section=\"best\">" +
         html_escape(pick) + "</pre>";
}

std::string distributions_html(const ChartData& d) {
  std::ostringstream h;
  h << "<h2>Block throughput distributions</h2><p class=\"note\">Every measured block of every "
       "repeat; a wide spread means a noisy measurement.</p>";
  h << strip_chart("blocks", d.labels, d.samples, d.unit);

  h << "<h2>Peak memory against throughput</h2><p class=\"note\">The Pareto front (no config "
       "is both smaller and faster) in green, joined; the baseline in purple.</p>";
  h << scatter("memory", d.mem_pts, "peak memory", "throughput (" + d.unit + "/s)", true, true);

  h << "<h2>Quality against speed</h2><p class=\"note\">Mean quality of each config against "
       "its median throughput; the baseline in purple.</p>";
  h << scatter("quality", d.quality_pts, "throughput (" + d.unit + "/s)", "quality", false, false,
               false);

  return h.str();
}

std::string claims_html(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec) {
  std::ostringstream h;
  if (!spec.claims.empty()) {
    std::vector<std::vector<std::string>> claim_rows;
    for (const auto& r : evaluate_claims(store, sweep, spec)) {
      const std::string change = config_label(r.claim->change);
      claim_rows.push_back({r.claim->text, change, r.claim->metric, expected_text(*r.claim),
                            r.ratio ? fixed(*r.ratio, 3) + "x" : "-", interval_text(r.low, r.high),
                            verdict_name(r.verdict), r.reason, r.claim->source});
    }
    h << "<h2>Claims</h2><p class=\"note\">What the sweep's sources promise for each change "
         "(ratio of the metric, changed config over its baseline) against the measured ratio and "
         "its 95% interval.</p>"
      << table_html({"claim", "change", "metric", "expected", "measured", "95% CI", "verdict",
                     "why", "source"},
                    claim_rows, {false, false, false, true, true, true, false, false, false});
  }
  return h.str();
}

std::string environment_html(db::Store& store, const db::SweepRecord& sweep) {
  std::ostringstream h;
  std::vector<std::vector<std::string>> envs;
  bool python = false;
  for (const auto& e : store.environments(sweep.id)) {
    const HistoryVersions v = versions_of(e);
    python = python || !v.python.empty();
    envs.push_back(
        {e.hostname, e.os, e.cpu_model, std::to_string(e.cpu_cores), e.torch_version, e.blas,
         std::to_string(e.threads), e.cuda_available ? "yes" : "no", e.gpus_json,
         e.gpusweep_version + " (" + e.git_commit + ")",
         v.python.empty()
             ? "-"
             : v.python + (v.packages.empty() ? "" : ": " + packages_text(v.packages, false))});
  }
  std::vector<std::string> head = {"host", "OS",      "CPU",  "cores", "LibTorch",
                                   "BLAS", "threads", "CUDA", "GPUs",  "gpusweep"};
  // The Python workloads' interpreter and packages, where a trial had them.
  if (python) {
    head.push_back("Python and packages");
  } else {
    for (auto& row : envs) row.pop_back();
  }
  h << "<h2>Environment</h2>" << table_html(head, envs);

  return h.str();
}

std::string problems_html(const std::vector<StoredTrial>& trials,
                          const std::vector<std::string>& keys) {
  std::ostringstream h;
  std::vector<std::vector<std::string>> problems;
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
    if (t.status == db::TrialStatus::ok) continue;
    problems.push_back({std::to_string(t.id), std::to_string(t.plan.config_index + 1),
                        config_label(Json::parse(t.plan.config_json), keys),
                        std::to_string(t.plan.repeat + 1), db::status_name(t.status),
                        t.error.value_or("")});
  }
  h << "<h2>Trials that did not finish ok</h2>";
  if (problems.empty()) {
    h << "<p class=\"note\">None.</p>";
  } else {
    h << table_html({"trial", "config", "settings", "repeat", "status", "reason"}, problems);
  }
  return h.str();
}

// A tune run (`gpusweep tune`): how the race went, replayed from its trials.
std::string race_html(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                      Rounds rounds) {
  const TuneSpec tune = spec.tune.value_or(TuneSpec{});
  if (!tune.race) return "";
  const TuneSpace space(spec, PluginManifest{});
  const RaceOptions options = race_options(spec, space, tune);
  const RaceStatus status = race(space, race_trials(store, sweep.id, tune), options,
                                 sweep.status == db::SweepStatus::finished);
  std::vector<std::vector<std::string>> rows;
  for (const RaceEvent& e : status.events) {
    rows.push_back({std::to_string(e.round), event_name(e.kind), std::to_string(e.config + 1),
                    space.label(e.config), e.reason});
  }
  std::ostringstream h;
  h << "<h2>The race</h2><p class=\"note\">gpusweep tune: candidates ran in rounds, each "
       "round in its own seeded order; after each round a candidate shown worse than the "
       "leader by a one-sided test was dropped, at a level that keeps the chance that a test "
       "ever drops the best at "
    << fixed(100 * tune.alpha, 0)
    << "% (constraints on noisy metrics such as quality are tests in the same budget; a "
       "failure the plugin reports, or an out-of-memory, writes a config off at once, and a "
       "timeout or crash after one retry), and the model of the knobs proposed new ones. "
    << (rounds == Rounds::confirmation
            ? "The winner's ratios above and the charts and tables below come from fresh "
              "confirmation rounds only (report --selection-data adds the racing rounds)."
            : "The winner's ratios above come from fresh confirmation rounds; the charts and "
              "tables below pool every round, the racing rounds included: selection data, "
              "which flatter the winner.")
    << "</p><pre>" << html_escape(render_tune(space, status, options.baseline, spec, tune))
    << "</pre>" << table_html({"after round", "event", "config", "settings", "evidence"}, rows);
  return h.str();
}

}  // namespace detail

}  // namespace gpusweep::host
