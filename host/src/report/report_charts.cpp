// The HTML report's charts, drawn as SVG so that the file needs nothing at
// all to display or print: bars with whiskers, strips of dots, scatter plots.
#include "report/report.hpp"
#include "report/report_internal.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

namespace gpusweep::host::detail {

// Six significant digits, like printf's %g; to_chars because a report of a
// big sweep formats hundreds of thousands of coordinates.
std::string num(double v) {
  char digits[32];
  const auto end =
      std::to_chars(digits, digits + sizeof digits, v, std::chars_format::general, 6).ptr;
  return std::string(digits, end);
}

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
                    bool x_bytes) {
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

}  // namespace gpusweep::host::detail
