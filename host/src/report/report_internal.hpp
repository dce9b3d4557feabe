// The HTML report's parts shared by its files (internal to report/): the
// data its charts show, the SVG charts, the table writer and the page's
// sections, which report.cpp's render_report puts together in order.
#pragma once

#include "analysis/compare.hpp"
#include "analysis/scaling.hpp"
#include "spec/sweep.hpp"

#include <gpusweep/db/store.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace gpusweep::host::detail {

struct Point {
  double x;
  double y;
  std::string label;
  bool flag;          // on the Pareto front (joined when the chart joins them)
  bool base = false;  // the baseline, drawn in its colour
};

// An axis's ticks: lo to hi in steps of step (1, 2 or 5 times a power of ten).
struct Ticks {
  double lo, hi, step;
};
// Ticks covering [lo, hi] in about `intervals` steps; hi > lo.
Ticks nice_ticks(double lo, double hi, int intervals = 4);
// A tick's value as text, with as many decimals as its step needs.
std::string tick_text(double v, double step);
// The range a chart draws values in [lo, hi] on: a little beyond them, from 0
// when from_zero, and within [0, 1] when they are.
Ticks fitted_axis(double lo, double hi, bool from_zero);

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

// The SVG charts (report_charts.cpp).
std::string num(double v);
double nice_max(double v);
// A config's name on the charts: "config N" and the settings that vary
// (whole: a chart wraps it onto several lines).
std::string chart_label(const ConfigSamples& c, const std::vector<std::string>& keys);
std::string bar_chart(const std::string& name, const std::vector<std::string>& labels,
                      const std::vector<double>& values, const std::vector<double>& low,
                      const std::vector<double>& high, const std::vector<bool>& highlight,
                      const std::string& unit, std::optional<double> reference_line);
std::string strip_chart(const std::string& name, const std::vector<std::string>& labels,
                        const std::vector<std::vector<double>>& samples, const std::string& unit);
// A tick label centred on x at baseline y, or ended at the chart's right
// edge (or begun at its left, 0) where centring would cut it off.
void tick_label(std::ostringstream& s, double x, double y, const std::string& text, double width);
std::string scatter(const std::string& name, const std::vector<Point>& pts,
                    const std::string& x_label, const std::string& y_label, bool join_flagged,
                    bool x_bytes = false, bool y_from_zero = true);

// An HTML table (report_sections.cpp).
std::string table_html(const std::vector<std::string>& headers,
                       const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& numeric = {});

// The page's sections, in the page's order (report_sections.cpp, but for
// scaling_html in report_scaling.cpp and target_html in report_target.cpp).
std::string header_html(const db::SweepRecord& sweep, const SweepSpec& spec, size_t trials);
std::string race_html(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec,
                      Rounds rounds);
std::string charts_html(const ChartData& d, const std::string& compare_problem);
std::string comparison_html(const std::vector<ComparisonRow>& rows,
                            const std::vector<std::string>& keys, double max_quality_loss);
std::string knobs_html(const std::vector<AblationRow>& knobs);
// best_pick's text as the page's section.
std::string best_html(const std::string& pick);
std::string scaling_html(const std::vector<ScalingRow>& rows, const std::vector<std::string>& keys);
std::string target_html(db::Store& store, const std::vector<StoredTrial>& trials,
                        const SweepSpec& spec, const std::vector<ComparisonRow>& rows,
                        const CompareOptions& opt, const std::vector<std::string>& keys);
std::string distributions_html(const ChartData& d);
std::string claims_html(db::Store& store, const db::SweepRecord& sweep, const SweepSpec& spec);
std::string environment_html(db::Store& store, const db::SweepRecord& sweep);
std::string problems_html(const std::vector<StoredTrial>& trials,
                          const std::vector<std::string>& keys);

}  // namespace gpusweep::host::detail
