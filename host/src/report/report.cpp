// The HTML report; see report.hpp. Charts are drawn here as SVG so that the
// file needs nothing at all to display or print.
#include "report/report.hpp"

#include "analysis/pareto.hpp"

#include "analysis/claims.hpp"

#include "analysis/compare.hpp"
#include "analysis/scaling.hpp"
#include "analysis/tune_trials.hpp"
#include "model/tune.hpp"
#include "report/output.hpp"
#include "report/results.hpp"
#include "report/tune_view.hpp"
#include "support/format.hpp"
#include "support/stats.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
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

namespace {

constexpr const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232a;margin:0 auto;max-width:1100px;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
.meta{color:#57606a} table{border-collapse:collapse;margin:8px 0;font-size:13px} th,td{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.n{text-align:right;font-variant-numeric:tabular-nums}
.faster{color:#1a7f37;font-weight:600} .slower{color:#cf222e;font-weight:600} .noisy{color:#9a6700}
svg{display:block;margin:8px 0;max-width:100%;height:auto} svg text{font:11px system-ui,sans-serif;fill:#1d232a}
.axis{stroke:#8c959f;stroke-width:1} .grid{stroke:#eaeef2;stroke-width:1}
.bar{fill:#6e9bd1} .bar.base{fill:#8250df} .whisker{stroke:#1d232a;stroke-width:1.5} .one{stroke:#cf222e;stroke-dasharray:4 3}
.dot{fill:#6e9bd1;fill-opacity:.65} .pt{fill:#6e9bd1} .pt.front{fill:#1a7f37} .front-line{stroke:#1a7f37;stroke-width:1.5;fill:none}
.note{color:#57606a;font-size:12px} .ideal{stroke:#8c959f;stroke-dasharray:5 4} .scale-line{stroke:#6e9bd1;stroke-width:1.5}
@media print{body{max-width:none;padding:0} h2{break-after:avoid} svg,table{break-inside:avoid}}
)";

struct Point {
  double x;
  double y;
  std::string label;
  bool flag;
};

// Six significant digits, like printf's %g; to_chars because a report of a
// big sweep formats hundreds of thousands of coordinates.
std::string num(double v) {
  char digits[32];
  const auto end =
      std::to_chars(digits, digits + sizeof digits, v, std::chars_format::general, 6).ptr;
  return std::string(digits, end);
}

// Per-config charts show at most this many configs: the baseline and the
// fastest others. Beyond a few dozen rows a chart can't be read, and the
// comparison table below lists every config anyway.
constexpr size_t kMaxChartedConfigs = 40;

// A "nice" axis maximum: 1, 2 or 5 times a power of ten at or above v.
double nice_max(double v) {
  if (v <= 0) return 1;
  const double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v) return m * p;
  }
  return 10 * p;
}

// The value axis of a chart with one row per label: v's x position.
struct XAxis {
  double left, plot, vmax;
  double operator()(double v) const { return left + plot * v / vmax; }
};

// Opens a row chart's <svg> and draws its five vertical grid lines, each
// labelled with its value (and suffix) below the rows.
void open_row_chart(std::ostringstream& s, const std::string& name, double width, double height,
                    const XAxis& x, const std::string& suffix) {
  s << "<svg data-chart=\"" << name << "\" viewBox=\"0 0 " << width << " " << height
    << "\" width=\"" << width << "\" role=\"img\">";
  for (int t = 0; t <= 4; ++t) {
    const double v = x.vmax * t / 4;
    s << "<line class=\"grid\" x1=\"" << num(x(v)) << "\" x2=\"" << num(x(v))
      << "\" y1=\"10\" y2=\"" << num(height - 25) << "\"/><text x=\"" << num(x(v)) << "\" y=\""
      << num(height - 10) << "\" text-anchor=\"middle\">" << html_escape(human_count(v) + suffix)
      << "</text>";
  }
}

// Horizontal bars with optional whiskers: one row per label.
std::string bar_chart(const std::string& name, const std::vector<std::string>& labels,
                      const std::vector<double>& values, const std::vector<double>& low,
                      const std::vector<double>& high, const std::vector<bool>& highlight,
                      const std::string& unit, std::optional<double> reference_line) {
  const double row = 22, left = 300, width = 860, plot = width - left - 70;
  const double height = row * static_cast<double>(labels.size()) + 40;
  double vmax = 0;
  for (size_t i = 0; i < values.size(); ++i)
    vmax = std::max({vmax, values[i], high.empty() ? 0 : high[i]});
  if (reference_line) vmax = std::max(vmax, *reference_line);
  vmax = nice_max(vmax * 1.05);
  const XAxis x{left, plot, vmax};
  std::ostringstream s;
  open_row_chart(s, name, width, height, x, "");
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = 14 + row * static_cast<double>(i);
    s << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + 12) << "\" text-anchor=\"end\">"
      << html_escape(truncate(labels[i], 48)) << "</text>";
    s << "<rect class=\"mark bar" << (highlight[i] ? " base" : "") << "\" x=\"" << num(left)
      << "\" y=\"" << num(y + 2) << "\" width=\"" << num(std::max(0.0, x(values[i]) - left))
      << "\" height=\"" << num(row - 6) << "\"><title>" << html_escape(labels[i]) << ": "
      << html_escape(human_count(values[i]) + " " + unit) << "</title></rect>";
    if (!low.empty() && !std::isnan(low[i])) {
      const double cy = y + row / 2 - 1;
      s << "<line class=\"whisker\" x1=\"" << num(x(low[i])) << "\" x2=\"" << num(x(high[i]))
        << "\" y1=\"" << num(cy) << "\" y2=\"" << num(cy) << "\"/>";
      for (double e : {low[i], high[i]}) {
        s << "<line class=\"whisker\" x1=\"" << num(x(e)) << "\" x2=\"" << num(x(e)) << "\" y1=\""
          << num(cy - 4) << "\" y2=\"" << num(cy + 4) << "\"/>";
      }
    }
    s << "<text x=\""
      << num(x(std::max(values[i], high.empty() || std::isnan(high[i]) ? 0 : high[i])) + 6)
      << "\" y=\"" << num(y + 12) << "\">" << html_escape(human_count(values[i])) << "</text>";
  }
  if (reference_line) {
    s << "<line class=\"one\" x1=\"" << num(x(*reference_line)) << "\" x2=\""
      << num(x(*reference_line)) << "\" y1=\"6\" y2=\"" << num(height - 25) << "\"/>";
  }
  s << "<line class=\"axis\" x1=\"" << num(left) << "\" x2=\"" << num(left) << "\" y1=\"6\" y2=\""
    << num(height - 25) << "\"/></svg>";
  return s.str();
}

// One row of dots per config: every block's throughput.
std::string strip_chart(const std::string& name, const std::vector<std::string>& labels,
                        const std::vector<std::vector<double>>& samples, const std::string& unit) {
  const double row = 22, left = 300, width = 860, plot = width - left - 40;
  const double height = row * static_cast<double>(labels.size()) + 40;
  double vmax = 0;
  for (const auto& v : samples) {
    for (double a : v) vmax = std::max(vmax, a);
  }
  vmax = nice_max(vmax * 1.05);
  const XAxis x{left, plot, vmax};
  std::ostringstream s;
  open_row_chart(s, name, width, height, x, " " + unit + "/s");
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = 14 + row * static_cast<double>(i) + row / 2 - 2;
    s << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
      << html_escape(truncate(labels[i], 48)) << "</text>";
    for (size_t k = 0; k < samples[i].size(); ++k) {
      const double jitter = (static_cast<double>(k % 5) - 2) * 1.6;
      s << "<circle class=\"mark dot\" cx=\"" << num(x(samples[i][k])) << "\" cy=\""
        << num(y + jitter) << "\" r=\"3\"/>";
    }
  }
  s << "</svg>";
  return s.str();
}

// Scatter plot; flagged points (the Pareto front) are joined by a line.
std::string scatter(const std::string& name, const std::vector<Point>& pts,
                    const std::string& x_label, const std::string& y_label, bool join_flagged,
                    bool x_bytes = false) {
  if (pts.empty()) {
    return "<svg data-chart=\"" + name +
           "\" viewBox=\"0 0 820 40\" width=\"820\" role=\"img\">"
           "<text x=\"10\" y=\"24\">no config reported " +
           html_escape(x_label + " and " + y_label) + "</text></svg>";
  }
  const double width = 820, height = 360, left = 70, bottom = 40, top = 14, right = 20;
  double xmax = 0, ymax = 0, ymin = 0;
  bool first = true;
  for (const auto& p : pts) {
    xmax = std::max(xmax, p.x);
    ymax = first ? p.y : std::max(ymax, p.y);
    ymin = first ? p.y : std::min(ymin, p.y);
    first = false;
  }
  xmax = nice_max(xmax * 1.05);
  double ylo = ymin >= 0 ? 0 : ymin - 0.05 * std::fabs(ymin);
  double yhi = ymax <= 0 ? 0 : nice_max(ymax * 1.05);
  if (yhi == ylo) yhi = ylo + 1;
  auto x = [&](double v) { return left + (width - left - right) * v / xmax; };
  auto y = [&](double v) {
    return height - bottom - (height - bottom - top) * (v - ylo) / (yhi - ylo);
  };
  std::ostringstream s;
  s << "<svg data-chart=\"" << name << "\" viewBox=\"0 0 " << width << " " << height
    << "\" width=\"" << width << "\" role=\"img\">";
  for (int t = 0; t <= 4; ++t) {
    const double vx = xmax * t / 4, vy = ylo + (yhi - ylo) * t / 4;
    s << "<line class=\"grid\" x1=\"" << num(x(vx)) << "\" x2=\"" << num(x(vx)) << "\" y1=\"" << top
      << "\" y2=\"" << num(height - bottom) << "\"/><text x=\"" << num(x(vx)) << "\" y=\""
      << num(height - bottom + 16) << "\" text-anchor=\"middle\">"
      << html_escape(x_bytes ? human_bytes(vx) : human_count(vx)) << "</text>";
    s << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << num(width - right) << "\" y1=\""
      << num(y(vy)) << "\" y2=\"" << num(y(vy)) << "\"/><text x=\"" << left - 6 << "\" y=\""
      << num(y(vy) + 4) << "\" text-anchor=\"end\">" << html_escape(human_count(vy)) << "</text>";
  }
  s << "<text x=\"" << num((left + width) / 2) << "\" y=\"" << num(height - 4)
    << "\" text-anchor=\"middle\">" << html_escape(x_label) << "</text>";
  s << "<text x=\"12\" y=\"" << num(height / 2)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " << num(height / 2) << ")\">"
    << html_escape(y_label) << "</text>";
  if (join_flagged) {
    std::vector<Point> front;
    for (const auto& p : pts) {
      if (p.flag) front.push_back(p);
    }
    std::sort(front.begin(), front.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    if (front.size() > 1) {
      s << "<polyline class=\"front-line\" points=\"";
      for (const auto& p : front) s << num(x(p.x)) << "," << num(y(p.y)) << " ";
      s << "\"/>";
    }
  }
  for (const auto& p : pts) {
    s << "<circle class=\"mark pt" << (p.flag ? " front" : "") << "\" cx=\"" << num(x(p.x))
      << "\" cy=\"" << num(y(p.y)) << "\" r=\"5\"><title>" << html_escape(p.label)
      << "</title></circle>";
  }
  s << "</svg>";
  return s.str();
}

std::string table_html(const std::vector<std::string>& headers,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& numeric = {}) {
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

// What the charts show: the configs with at least one ok trial, in config
// order, at most kMaxChartedConfigs of them (the baseline and the fastest).
struct ChartData {
  std::vector<std::string> labels;
  std::vector<double> medians, lows, highs, ratio, rlow, rhigh;
  std::vector<bool> is_base;
  std::vector<std::vector<double>> samples;
  std::vector<Point> mem_pts, quality_pts;
  std::string unit;
  std::string note;  // what was left out of the charts
};

ChartData chart_data(const std::vector<ComparisonRow>& rows, const std::vector<std::string>& keys) {
  ChartData d;
  // Each charted config's blocks: their interval and strip are made for the
  // configs the charts keep (the slowest of 10,000 are left out).
  std::vector<const std::vector<double>*> blocks;
  for (const auto& r : rows) {
    const auto& c = *r.config;
    if (c.throughput.empty()) continue;
    d.unit = c.unit;
    const std::string label = "#" + std::to_string(c.config_index + 1) + " " +
                              (keys.empty() ? std::string("(base)") : config_label(c.config, keys));
    d.labels.push_back(label);
    const double med = quantile(c.throughput, 0.5);
    d.medians.push_back(med);
    blocks.push_back(&c.throughput);
    d.is_base.push_back(r.baseline);
    d.ratio.push_back(r.baseline ? 1.0 : r.ratio ? r.ratio->ratio : NAN);
    d.rlow.push_back(r.ratio ? r.ratio->low : NAN);
    d.rhigh.push_back(r.ratio ? r.ratio->high : NAN);
    if (c.peak_memory_bytes) d.mem_pts.push_back({*c.peak_memory_bytes, med, label, false});
    if (!c.quality.empty()) {
      double q = 0;
      for (const auto& v : c.quality) q += v.value;
      d.quality_pts.push_back({med, q / static_cast<double>(c.quality.size()), label, r.baseline});
    }
  }
  {
    std::vector<std::pair<double, double>> xy;
    for (const auto& p : d.mem_pts) xy.emplace_back(p.x, p.y);
    const auto front = pareto_front(xy);
    for (size_t i = 0; i < d.mem_pts.size(); ++i) d.mem_pts[i].flag = front[i];
  }

  {
    std::vector<std::pair<double, double>> xy;
    for (const auto& p : d.mem_pts) xy.emplace_back(p.x, p.y);
    const auto front = pareto_front(xy);
    for (size_t i = 0; i < d.mem_pts.size(); ++i) d.mem_pts[i].flag = front[i];
  }
  if (d.labels.size() > kMaxChartedConfigs) {
    std::vector<size_t> order(d.labels.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (d.is_base[a] != d.is_base[b]) return static_cast<bool>(d.is_base[a]);
      return d.medians[a] > d.medians[b];
    });
    order.resize(kMaxChartedConfigs);
    std::sort(order.begin(), order.end());
    auto keep = [&](auto& v) {
      std::remove_reference_t<decltype(v)> kept;
      for (size_t i : order) kept.push_back(v[i]);
      v = std::move(kept);
    };
    d.note = " The charts show the baseline and the " + std::to_string(kMaxChartedConfigs - 1) +
             " fastest of " + std::to_string(d.labels.size()) +
             " configs; the table lists them all.";
    keep(d.labels), keep(d.medians), keep(d.is_base), keep(d.ratio), keep(d.rlow), keep(d.rhigh),
        keep(blocks);
  }
  for (const auto* b : blocks) {
    const auto [lo, hi] = geometric_mean_interval(*b);
    d.lows.push_back(lo);
    d.highs.push_back(hi);
    d.samples.push_back(*b);
  }
  return d;
}

std::string header_html(const db::SweepRecord& sweep, const SweepSpec& spec, size_t trials) {
  std::ostringstream h;
  h << "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << "<title>gpusweep: " << html_escape(sweep.name) << "</title><style>" << kCss
    << "</style></head><body>";
  h << "<h1>Sweep " << html_escape(sweep.name) << "</h1><p class=\"meta\">run " << sweep.id
    << " &middot; workload " << html_escape(sweep.workload) << " &middot; "
    << html_escape(sweep.status) << " &middot; " << html_escape(sweep.created_at) << " &middot; "
    << trials << " trials";
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
       "throughput with its 95% interval; the dashed line is 1x.</p>";
  h << bar_chart("speedup", ratio_labels, rv, rl, rh, rb, "x", 1.0);

  return h.str();
}

std::string comparison_html(const std::vector<ComparisonRow>& rows,
                            const std::vector<std::string>& keys) {
  std::ostringstream h;
  std::vector<std::vector<std::string>> ctable;
  for (const auto& r : rows) {
    const auto& c = *r.config;
    ctable.push_back({"#" + std::to_string(c.config_index + 1),
                      keys.empty() ? "(base)" : config_label(c.config, keys),
                      c.throughput.empty() ? "-" : human_rate(quantile(c.throughput, 0.5), c.unit),
                      r.baseline ? "1.00x"
                      : r.ratio  ? fixed(r.ratio->ratio, 3) + "x"
                                 : "-",
                      r.ratio ? interval_text(r.ratio->low, r.ratio->high) : "-",
                      r.ratio ? fixed(r.ratio->p, 3) : "-",
                      r.baseline  ? "baseline"
                      : r.verdict ? to_string(*r.verdict)
                                  : (c.ok == 0 ? c.problem : "-"),
                      r.quality ? fixed(100 * r.quality->change, 1) + "%" : "-",
                      c.peak_memory_bytes ? human_bytes(*c.peak_memory_bytes) : "-"});
  }
  h << table_html({"config", "settings", "throughput", "ratio", "95% CI", "p", "verdict",
                   "quality change", "peak memory"},
                  ctable, {false, false, true, true, true, true, false, true, true});

  return h.str();
}

std::string distributions_html(const ChartData& d) {
  std::ostringstream h;
  h << "<h2>Block throughput distributions</h2><p class=\"note\">Every measured block of every "
       "repeat; a wide spread means a noisy measurement.</p>";
  h << strip_chart("blocks", d.labels, d.samples, d.unit);

  h << "<h2>Peak memory against throughput</h2><p class=\"note\">The Pareto front (no config "
       "is both smaller and faster) in green.</p>";
  h << scatter("memory", d.mem_pts, "peak memory", "throughput (" + d.unit + "/s)", true, true);

  h << "<h2>Quality against speed</h2><p class=\"note\">Mean quality of each config against "
       "its median throughput; the baseline in green.</p>";
  h << scatter("quality", d.quality_pts, "throughput (" + d.unit + "/s)", "quality", false);

  return h.str();
}

std::string claims_html(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec) {
  std::ostringstream h;
  if (!spec.claims.empty()) {
    std::vector<std::vector<std::string>> claim_rows;
    for (const auto& r : evaluate_claims(store, sweep, spec)) {
      std::string change;
      for (const auto& [k, v] : r.claim->change.items()) {
        change += (change.empty() ? "" : " ") + k + "=" +
                  (v.is_string() ? v.get<std::string>() : v.dump());
      }
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
  for (const auto& e : store.environments(sweep.id)) {
    envs.push_back({e.hostname, e.os, e.cpu_model, std::to_string(e.cpu_cores), e.torch_version,
                    e.blas, std::to_string(e.threads), e.cuda_available ? "yes" : "no", e.gpus_json,
                    e.gpusweep_version + " (" + e.git_commit + ")"});
  }
  h << "<h2>Environment</h2>"
    << table_html({"host", "OS", "CPU", "cores", "LibTorch", "BLAS", "threads", "CUDA", "GPUs",
                   "gpusweep"},
                  envs);

  return h.str();
}

std::string problems_html(const std::vector<db::TrialRecord>& trials,
                          const std::vector<std::string>& keys) {
  std::ostringstream h;
  std::vector<std::vector<std::string>> problems;
  for (const auto& t : trials) {
    if (t.status == db::TrialStatus::ok) continue;
    problems.push_back({std::to_string(t.id), config_label(Json::parse(t.plan.config_json), keys),
                        std::to_string(t.plan.repeat + 1), db::status_name(t.status),
                        t.error.value_or("")});
  }
  h << "<h2>Trials that did not finish ok</h2>";
  if (problems.empty()) {
    h << "<p class=\"note\">None.</p>";
  } else {
    h << table_html({"trial", "settings", "repeat", "status", "reason"}, problems);
  }
  return h.str();
}

// A tune run (`gpusweep tune`): how the race went, replayed from its trials.
std::string race_html(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                      Rounds rounds) {
  const TuneSpec tune = parse_tune(spec.source, spec.tune);
  if (!tune.race) return "";
  const TuneSpace space(spec, PluginManifest{});
  const RaceOptions options = race_options(spec, space, tune);
  const RaceStatus status =
      race(space, race_trials(store, sweep.id, tune), options, sweep.status == "finished");
  std::vector<std::vector<std::string>> rows;
  for (const RaceEvent& e : status.events) {
    rows.push_back({std::to_string(e.round), event_name(e.kind), "#" + std::to_string(e.config + 1),
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

// A run with measure.target: each trial's curve of the target metric
// against its training time (the blocks' clock), one colour per config (the
// first kCurveConfigs), the target as a dashed line; then each config's
// time to target and its ratio to the baseline (compare_targets).
constexpr size_t kCurveConfigs = 8;
constexpr const char* kCurveColours[kCurveConfigs] = {"#8250df", "#1a7f37", "#cf222e", "#0969da",
                                                      "#9a6700", "#bf3989", "#1b7c83", "#57606a"};

std::string target_curves_svg(db::Store& store, const std::vector<db::TrialRecord>& trials,
                              const std::vector<ComparisonRow>& rows, const TargetSpec& target,
                              const std::vector<std::string>& keys) {
  struct Curve {
    size_t colour;
    std::vector<std::pair<double, double>> points;  // (training s, metric)
  };
  std::map<int64_t, size_t> colour;  // config index -> colour, baseline first
  for (const auto& r : rows) {
    if (r.baseline) colour[r.config->config_index] = 0;
  }
  for (const auto& r : rows) {
    if (colour.size() < kCurveConfigs && colour.count(r.config->config_index) == 0U) {
      colour[r.config->config_index] = colour.size();
    }
  }
  std::vector<Curve> curves;
  double tmax = 0, vmin = target.value, vmax = target.value;
  for (const auto& t : trials) {
    auto c = colour.find(t.plan.config_index);
    if (c == colour.end() || t.status != db::TrialStatus::ok || !t.summary) continue;
    const std::string metric =
        !target.metric.empty() ? target.metric : t.summary->quality_metric.value_or("");
    std::map<int64_t, double> clock, value;
    for (const auto& m : store.metrics(t.id)) {
      if (m.kind != "eval") continue;
      if (m.name == std::string(kCurvePrefix) + "train_s") clock[m.at_step] = m.value;
      if (m.name == metric) value[m.at_step] = m.value;
    }
    Curve curve{c->second, {}};
    for (const auto& [step, sec] : clock) {
      if (value.count(step) == 0U || !std::isfinite(value[step])) continue;
      curve.points.emplace_back(sec, value[step]);
      tmax = std::max(tmax, sec);
      vmin = std::min(vmin, value[step]);
      vmax = std::max(vmax, value[step]);
    }
    if (!curve.points.empty()) curves.push_back(std::move(curve));
  }
  const double width = 820, height = 320, left = 70, bottom = 40, top = 14, right = 20;
  tmax = nice_max(tmax * 1.02);
  if (vmax == vmin) vmax = vmin + 1;
  auto x = [&](double v) { return left + (width - left - right) * v / tmax; };
  auto y = [&](double v) {
    return height - bottom - (height - bottom - top) * (v - vmin) / (vmax - vmin);
  };
  std::ostringstream s;
  s << "<svg data-chart=\"target_curves\" viewBox=\"0 0 " << width << " " << height << "\" width=\""
    << width << "\" role=\"img\">";
  for (int k = 0; k <= 4; ++k) {
    const double vx = tmax * k / 4, vy = vmin + (vmax - vmin) * k / 4;
    s << "<line class=\"grid\" x1=\"" << num(x(vx)) << "\" x2=\"" << num(x(vx)) << "\" y1=\"" << top
      << "\" y2=\"" << num(height - bottom) << "\"/><text x=\"" << num(x(vx)) << "\" y=\""
      << num(height - bottom + 16) << "\" text-anchor=\"middle\">" << html_escape(human_seconds(vx))
      << "</text><text x=\"" << left - 6 << "\" y=\"" << num(y(vy) + 4) << "\" text-anchor=\"end\">"
      << html_escape(fixed(vy, 3)) << "</text>";
  }
  s << "<text x=\"" << num((left + width) / 2) << "\" y=\"" << num(height - 4)
    << "\" text-anchor=\"middle\">training time (the blocks' clock)</text>";
  s << "<line class=\"one\" x1=\"" << left << "\" x2=\"" << num(width - right) << "\" y1=\""
    << num(y(target.value)) << "\" y2=\"" << num(y(target.value)) << "\"><title>target "
    << html_escape(number_text(target.value)) << "</title></line>";
  for (const auto& c : curves) {
    s << "<polyline class=\"curve\" fill=\"none\" stroke-width=\"1.2\" stroke=\""
      << kCurveColours[c.colour] << "\" points=\"";
    for (const auto& [t, v] : c.points) s << num(x(t)) << "," << num(y(v)) << " ";
    s << "\"/>";
  }
  s << "</svg><p class=\"note\">";
  for (const auto& r : rows) {
    auto c = colour.find(r.config->config_index);
    if (c == colour.end()) continue;
    s << "<span style=\"color:" << kCurveColours[c->second] << "\">&#9632;</span> #"
      << r.config->config_index + 1 << " "
      << html_escape(keys.empty() ? "(base)" : config_label(r.config->config, keys)) << " &nbsp; ";
  }
  s << "</p>";
  return s.str();
}

std::string target_html(db::Store& store, const std::vector<db::TrialRecord>& trials,
                        const SweepSpec& spec, const std::vector<ComparisonRow>& rows,
                        const CompareOptions& opt, const std::vector<std::string>& keys) {
  if (!spec.measure.target || rows.empty()) return "";
  const TargetSpec& target = *spec.measure.target;
  std::ostringstream h;
  h << "<h2>Time to target</h2><p class=\"note\">Each trial trained until "
    << html_escape(target.metric.empty() ? std::string("its quality metric") : target.metric)
    << " reached " << html_escape(number_text(target.value)) << " (the dashed line) or its budget ("
    << html_escape(target.max_s > 0 ? human_seconds(target.max_s) + " of training"
                                    : std::to_string(target.max_steps) + " steps")
    << ") ended it: then it is censored, its time a lower bound. Time is the training clock "
       "(blocks only; evaluations are timed apart).</p>";
  h << target_curves_svg(store, trials, rows, target, keys);
  std::vector<std::vector<std::string>> table;
  for (const auto& t : compare_targets(rows, opt)) {
    const auto& c = *t.config;
    const std::string median = median_text(t.times);
    table.push_back(
        {"#" + std::to_string(c.config_index + 1),
         keys.empty() ? "(base)" : config_label(c.config, keys),
         std::to_string(t.times.reached) + "/" + std::to_string(t.times.n), median,
         t.times.interval
             ? "[" + human_seconds(t.times.low) + ", " +
                   (std::isinf(t.times.high) ? std::string("inf") : human_seconds(t.times.high)) +
                   "]"
             : "-",
         t.baseline ? "1.00x"
         : t.ratio  ? fixed(t.ratio->ratio, 3) + "x"
                    : "-",
         t.ratio && t.ratio->interval ? interval_text(t.ratio->low, t.ratio->high) : "-",
         t.verdict +
             (t.inversion ? " (INVERSION: the throughput verdict says the opposite)" : "")});
  }
  h << table_html(
      {"#", "config", "reached", "time to target", "95% CI", "time ratio", "95% CI", "verdict"},
      table, {true, false, true, true, true, true, true, false});
  return h.str();
}

}  // namespace

namespace {

// Data-parallel scaling (world_size > 1): throughput over one rank's
// against world_size, each config's interval as a whisker, from (1, 1),
// and the ideal line (N ranks, N times the throughput); the table beside.
// "" when no config has more than one rank.
// Long by design: one SVG's axes, ideal line and marks, in drawing order.
std::string scaling_html(const std::vector<ScalingRow>& rows,
                         const std::vector<std::string>& keys) {
  if (rows.empty()) return "";
  double top_n = 2, top_y = 2;
  for (const auto& r : rows) {
    top_n = std::max(top_n, static_cast<double>(r.world_size));
    if (r.speedup) top_y = std::max(top_y, r.speedup->high);
  }
  top_y = std::max(top_y, top_n) * 1.05;
  const double width = 520, height = 360, left = 60, bottom = 40, top = 14, right = 20;
  auto x = [&](double v) { return left + (width - left - right) * (v - 1) / (top_n - 1); };
  auto y = [&](double v) { return height - bottom - (height - bottom - top) * v / top_y; };
  std::ostringstream s;
  s << "<svg data-chart=\"scaling\" viewBox=\"0 0 " << width << " " << height << "\" width=\""
    << width << "\" role=\"img\">";
  for (int t = 0; t <= 4; ++t) {
    const double vy = top_y * t / 4;
    s << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << num(width - right) << "\" y1=\""
      << num(y(vy)) << "\" y2=\"" << num(y(vy)) << "\"/><text x=\"" << left - 6 << "\" y=\""
      << num(y(vy) + 4) << "\" text-anchor=\"end\">" << fixed(vy, 1) << "x</text>";
  }
  for (int n = 1; n <= static_cast<int>(top_n); ++n) {
    s << "<text x=\"" << num(x(n)) << "\" y=\"" << num(height - bottom + 16)
      << "\" text-anchor=\"middle\">" << n << "</text>";
  }
  s << "<text x=\"" << num((left + width) / 2) << "\" y=\"" << num(height - 4)
    << "\" text-anchor=\"middle\">world_size (ranks)</text><text x=\"12\" y=\"" << num(height / 2)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " << num(height / 2)
    << ")\">throughput over one rank's</text>";
  s << "<line class=\"ideal\" x1=\"" << num(x(1)) << "\" y1=\"" << num(y(1)) << "\" x2=\""
    << num(x(top_n)) << "\" y2=\"" << num(y(top_n)) << "\"><title>ideal: N ranks, N times the "
    << "throughput</title></line>";
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> others;  // the varying settings but world_size (a column)
  for (const auto& k : keys) {
    if (k != "world_size") others.push_back(k);
  }
  for (const auto& r : rows) {
    std::string label = "#" + std::to_string(r.config->config_index + 1);
    if (!others.empty()) label += " " + config_label(r.config->config, others);
    table.push_back({label, std::to_string(r.world_size), r.kind,
                     r.speedup ? fixed(r.speedup->ratio, 2) + "x" : "-",
                     r.speedup ? interval_text(r.speedup->low, r.speedup->high) : "-",
                     std::isfinite(r.efficiency) ? fixed(100 * r.efficiency, 0) + "%" : "-",
                     r.comm_share ? fixed(100 * *r.comm_share, 1) + "%" : "-", r.note});
    if (!r.speedup) continue;
    const double n = static_cast<double>(r.world_size);
    s << "<line class=\"scale-line\" x1=\"" << num(x(1)) << "\" y1=\"" << num(y(1)) << "\" x2=\""
      << num(x(n)) << "\" y2=\"" << num(y(r.speedup->ratio)) << "\"/>";
    s << "<line class=\"whisker\" x1=\"" << num(x(n)) << "\" x2=\"" << num(x(n)) << "\" y1=\""
      << num(y(r.speedup->low)) << "\" y2=\"" << num(y(r.speedup->high)) << "\"/>";
    s << "<circle class=\"mark pt\" cx=\"" << num(x(n)) << "\" cy=\"" << num(y(r.speedup->ratio))
      << "\" r=\"5\"><title>" << html_escape(label) << ": " << fixed(r.speedup->ratio, 2) << "x "
      << html_escape(interval_text(r.speedup->low, r.speedup->high)) << "</title></circle>";
  }
  s << "</svg>";
  return "<h2>Data-parallel scaling</h2><p class=\"note\">Each config with more than one rank "
         "against the same settings at world_size 1 (weak: the same batch a rank; strong: the "
         "same global batch): global throughput over the single "
         "process's (paired by repeat, 95% interval as the whisker), the dashed line the ideal "
         "(N ranks, N times the throughput); efficiency is the speed-up over N, and the exposed "
         "communication the share of block time in all-reduce that backward did not hide.</p>" +
         s.str() +
         table_html(
             {"config", "world_size", "speed-up", "95% CI", "efficiency", "comm exposed", "note"},
             table, {false, true, true, true, true, true, false});
}

}  // namespace

std::string render_report(db::Store& store, const db::SweepRecord& sweep, bool selection_data) {
  const SweepSpec spec = stored_spec(sweep);
  const auto keys = varying_keys(spec);
  const Rounds rounds = rounds_for(spec, selection_data);
  std::vector<db::TrialRecord> trials;
  const auto configs = gather_configs(store, sweep.id, true, rounds, &trials);
  CompareOptions opt;
  opt.baseline = spec.baseline;
  opt.sequential = stops_when_precise(spec);
  std::vector<ComparisonRow> rows;
  std::string compare_problem;
  try {
    rows = compare_configs(configs, opt);
  } catch (const std::exception& e) {
    compare_problem = e.what();
  }
  const ChartData d = chart_data(rows, keys);
  return header_html(sweep, spec, trials.size()) + race_html(store, sweep, spec, rounds) +
         charts_html(d, compare_problem) + comparison_html(rows, keys) +
         scaling_html(scaling(configs, opt), keys) +
         target_html(store, trials, spec, rows, opt, keys) + distributions_html(d) +
         claims_html(store, sweep, spec) + environment_html(store, sweep) +
         problems_html(trials, keys) +
         "<p class=\"note\">Generated by gpusweep from the results database.</p></body></html>\n";
}

}  // namespace gpusweep::host
