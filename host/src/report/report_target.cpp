// The HTML report's time-to-target section (a run with measure.target):
// each trial's curve of the target metric, drawn as SVG, and each config's
// time to target against the baseline's.
#include "report/report.hpp"

#include "report/output.hpp"
#include "report/report_internal.hpp"
#include "support/format.hpp"

#include <cmath>
#include <map>
#include <sstream>

namespace gpusweep::host::detail {

namespace {

// A run with measure.target: each trial's curve of the target metric
// against its training time (the blocks' clock), one colour per config (the
// first kCurveConfigs), the target as a dashed line; then each config's
// time to target and its ratio to the baseline (compare_targets).
constexpr size_t kCurveConfigs = 8;
// The same as .c0 to .c7 in the stylesheet, which the legend uses (serve's
// policy allows that stylesheet, not a style attribute); the baseline's,
// first, is the purple the other charts draw it in.
constexpr const char* kCurveColours[kCurveConfigs] = {"#8250df", "#1a7f37", "#cf222e", "#0969da",
                                                      "#9a6700", "#bf3989", "#1b7c83", "#57606a"};

std::string target_curves_svg(db::Store& store, const std::vector<StoredTrial>& trials,
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
  for (const auto& stored : trials) {
    const db::TrialRecord& t = stored.row;
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
    s << "<span class=\"c" << c->second << "\">&#9632;</span> "
      << html_escape(chart_label(*r.config, keys)) << (r.baseline ? " (the baseline)" : "")
      << " &nbsp; ";
  }
  s << "</p>";
  return s.str();
}

}  // namespace

std::string target_html(db::Store& store, const std::vector<StoredTrial>& trials,
                        const SweepSpec& spec, const std::vector<ComparisonRow>& rows,
                        const CompareOptions& opt, const std::vector<std::string>& keys) {
  if (!spec.measure.target || rows.empty()) return "";
  const TargetSpec& target = *spec.measure.target;
  std::ostringstream h;
  h << "<h2>Time to target</h2><p class=\"note\">Each trial trained until "
    << html_escape(target.metric.empty() ? std::string("its quality metric") : target.metric)
    << " reached " << html_escape(number_text(target.value))
    << " (the dashed line; the baseline's curves in purple) or its budget ("
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
        {std::to_string(c.config_index + 1),
         keys.empty() ? "(the base)" : config_label(c.config, keys),
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
  h << table_html({"config", "settings", "reached", "time to target", "95% CI", "time ratio",
                   "95% CI", "verdict"},
                  table, {true, false, true, true, true, true, true, false});
  return h.str();
}

}  // namespace gpusweep::host::detail
