// The history page; see history_page.hpp.
#include "report/history_page.hpp"

#include "report/history_view.hpp"
#include "report/report.hpp"
#include "report/report_internal.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace gpusweep::host {

namespace {

using detail::num;

// The chart's frame: runs evenly spaced from left to right (a run a slot,
// in time order), throughput up.
struct Frame {
  double width = 860, height = 300, left = 70, right = 30, top = 30, bottom = 48;
  size_t n = 1;
  detail::Ticks y_ticks{0, 1, 1};
  double slot() const { return (width - left - right) / static_cast<double>(n); }
  double x(size_t i) const { return left + slot() * (static_cast<double>(i) + 0.5); }
  double y(double v) const {
    return height - bottom - (height - bottom - top) * (v - y_ticks.lo) / (y_ticks.hi - y_ticks.lo);
  }
  double plot_bottom() const { return height - bottom; }
};

Frame frame_for(const HistorySeries& s) {
  Frame f;
  f.n = s.points.size();
  double lo = s.points.front().throughput, hi = lo;
  for (const auto& p : s.points) {
    lo = std::min(lo, p.throughput);
    hi = std::max(hi, p.throughput);
    if (std::isfinite(p.low)) lo = std::min(lo, p.low), hi = std::max(hi, p.high);
  }
  f.y_ticks = detail::fitted_axis(lo, hi, false);
  return f;
}

// "11-28 19:43": a run's created_at (ISO 8601 UTC) under its slot.
std::string when_text(const std::string& created_at) {
  std::string w = created_at.size() >= 16 ? created_at.substr(5, 11) : created_at;
  if (w.size() > 5 && w[5] == 'T') w[5] = ' ';
  return w;
}

// The grid, the throughput ticks, the ids of about eight runs (runs minutes
// apart would repeat a date) and the captions, the first and last dates in
// the horizontal one.
void draw_axes(std::ostringstream& s, const Frame& f, const HistorySeries& series) {
  const detail::Ticks& yt = f.y_ticks;
  for (double v = yt.lo; v <= yt.hi + yt.step * 1e-6; v += yt.step) {
    s << "<line class=\"grid\" x1=\"" << f.left << "\" x2=\"" << num(f.width - f.right)
      << "\" y1=\"" << num(f.y(v)) << "\" y2=\"" << num(f.y(v)) << "\"/><text x=\"" << f.left - 6
      << "\" y=\"" << num(f.y(v) + 4) << "\" text-anchor=\"end\">"
      << html_escape(detail::tick_text(v, yt.step)) << "</text>";
  }
  const size_t every = std::max<size_t>(1, (f.n + 7) / 8);
  for (size_t i = 0; i < f.n; i += every) {
    detail::tick_label(s, f.x(i), f.plot_bottom() + 16,
                       "run " + std::to_string(series.points[i].run_id), f.width);
  }
  s << "<line class=\"axis\" x1=\"" << f.left << "\" x2=\"" << num(f.width - f.right) << "\" y1=\""
    << num(f.plot_bottom()) << "\" y2=\"" << num(f.plot_bottom()) << "\"/>";
  s << "<text class=\"caption\" x=\"" << num((f.left + f.width - f.right) / 2) << "\" y=\""
    << num(f.height - 6) << "\" text-anchor=\"middle\">runs oldest to newest, evenly spaced ("
    << html_escape(f.n == 0 ? std::string()
                            : when_text(series.points.front().created_at) + " to " +
                                  when_text(series.points.back().created_at) + " UTC")
    << ")</text>";
  const double mid = (f.top + f.plot_bottom()) / 2;
  s << "<text class=\"caption\" x=\"12\" y=\"" << num(mid)
    << "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " << num(mid) << ")\">"
    << html_escape(series.unit + "/s") << "</text>";
}

// Each segment between change points at its level (the geometric mean of
// its runs' throughput, the level the change points compare).
void draw_levels(std::ostringstream& s, const Frame& f, const HistorySeries& series) {
  std::vector<size_t> starts = {0};
  for (const auto& cp : series.change_points) starts.push_back(cp.index);
  starts.push_back(series.points.size());
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    double sum = 0;
    for (size_t i = starts[k]; i < starts[k + 1]; ++i) sum += std::log(series.points[i].throughput);
    const double level = std::exp(sum / static_cast<double>(starts[k + 1] - starts[k]));
    s << "<line class=\"level\" x1=\"" << num(f.x(starts[k]) - f.slot() / 2) << "\" x2=\""
      << num(f.x(starts[k + 1] - 1) + f.slot() / 2) << "\" y1=\"" << num(f.y(level)) << "\" y2=\""
      << num(f.y(level)) << "\"/>";
  }
}

// A line where each new level starts, its ratio and p above the plot, and a
// triangle on the axis where the build or the software changed.
void draw_marks(std::ostringstream& s, const Frame& f, const HistorySeries& series) {
  for (const auto& cp : series.change_points) {
    const double x = f.x(cp.index);
    const std::string text = history_change_text(cp);
    const bool near_right = x + 6.2 * static_cast<double>(text.size()) > f.width - 4;
    s << "<line class=\"cp\" data-run=\"" << series.points[cp.index].run_id << "\" x1=\"" << num(x)
      << "\" x2=\"" << num(x) << "\" y1=\"" << num(f.top - 4) << "\" y2=\"" << num(f.plot_bottom())
      << "\"/><text class=\"cp-label\" x=\"" << num(near_right ? x - 4 : x + 4) << "\" y=\""
      << num(f.top - 8) << "\" text-anchor=\"" << (near_right ? "end" : "start") << "\">"
      << html_escape(text) << "</text>";
  }
  for (size_t i = 0; i < series.points.size(); ++i) {
    const HistoryPoint& p = series.points[i];
    if (p.changes.empty()) continue;
    std::string text = "run " + std::to_string(p.run_id) + ":";
    for (const auto& c : p.changes) text += " " + c + ";";
    text.pop_back();
    const double x = f.x(i), y = f.plot_bottom();
    s << "<path class=\"env\" d=\"M" << num(x) << " " << num(y - 9) << " L" << num(x - 5) << " "
      << num(y) << " L" << num(x + 5) << " " << num(y) << " Z\"><title>" << html_escape(text)
      << "</title></path>";
  }
}

// Each run's throughput with its interval as whiskers, its details in a
// tooltip.
void draw_points(std::ostringstream& s, const Frame& f, const HistorySeries& series) {
  for (size_t i = 0; i < series.points.size(); ++i) {
    const HistoryPoint& p = series.points[i];
    const double x = f.x(i);
    if (std::isfinite(p.low)) {
      s << "<line class=\"whisker\" x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\""
        << num(f.y(p.low)) << "\" y2=\"" << num(f.y(p.high)) << "\"/>";
      for (double e : {p.low, p.high}) {
        s << "<line class=\"whisker\" x1=\"" << num(x - 3) << "\" x2=\"" << num(x + 3) << "\" y1=\""
          << num(f.y(e)) << "\" y2=\"" << num(f.y(e)) << "\"/>";
      }
    }
    const std::string interval =
        std::isfinite(p.low) ? ", 95% CI [" + human_count(p.low) + ", " + human_count(p.high) + "]"
                             : ", one repeat: no interval";
    s << "<circle class=\"mark pt\" cx=\"" << num(x) << "\" cy=\"" << num(f.y(p.throughput))
      << "\" r=\"4\"><title>"
      << html_escape("run " + std::to_string(p.run_id) + " (" + p.run_name + "), " + p.created_at +
                     ", build " + p.versions.build + ": " + human_rate(p.throughput, series.unit) +
                     interval)
      << "</title></circle>";
  }
}

std::string series_chart(const HistorySeries& series, size_t i) {
  const Frame f = frame_for(series);
  std::ostringstream s;
  s << "<svg data-chart=\"history-" << i + 1 << "\" viewBox=\"0 0 " << f.width << " " << f.height
    << "\" width=\"" << f.width << "\" role=\"img\">";
  draw_axes(s, f, series);
  draw_levels(s, f, series);
  draw_marks(s, f, series);
  draw_points(s, f, series);
  s << "</svg>";
  return s.str();
}

std::string series_section(const HistoryResult& result, size_t i) {
  const HistorySeries& s = result.series[i];
  std::string out = "<h2>Series " + std::to_string(i + 1) + ": " +
                    html_escape(s.workload + ", " + history_series_label(result, s)) +
                    "</h2><p class=\"meta\">on " + html_escape(s.machine);
  for (const auto& line : history_notes(result, i)) out += "<br>" + html_escape(line);
  out += "</p>" + series_chart(s, i);
  const TextTable t = history_table(result, i);
  return out + detail::table_html(t.headers, t.rows, t.numeric);
}

}  // namespace

std::string history_html(const HistoryResult& result, const std::string& what,
                         const std::string& sources) {
  std::string out =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>gpusweep history: " +
      html_escape(what) + "</title><style>" + report_css() +
      "</style></head><body><h1>History of " + html_escape(what) + "</h1><p class=\"meta\">" +
      html_escape(sources) + " &middot; " + std::to_string(result.series.size()) + " series</p>";
  if (result.series.empty()) return out + "<p>No finished run matches.</p></body></html>\n";
  out +=
      "<p class=\"note\">Each dot is a run's throughput (the median of its pooled blocks), its "
      "whiskers the " +
      html_escape(kHistoryInterval) +
      ". Grey dashes: each segment's level; a red dashed line where a new level starts, with "
      "the new level over the old and p (" +
      html_escape(kHistoryMethod) + ", p < " + max_p_text(result.options) + ", at least " +
      std::to_string(result.options.min_segment) +
      " runs a segment); an amber triangle where the build, torch, CUDA, the driver's CUDA "
      "or gpusweep changed (its tooltip says what).</p>";
  for (size_t i = 0; i < result.series.size(); ++i) out += series_section(result, i);
  return out +
         "<p class=\"note\">Generated by gpusweep history from the results database.</p>"
         "</body></html>\n";
}

}  // namespace gpusweep::host
