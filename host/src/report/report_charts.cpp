// The HTML report's charts, drawn as SVG so that the file needs nothing at
// all to display or print: bars with whiskers, strips of dots, scatter plots.
// Every colour comes from the report's one stylesheet (classes), none from a
// style attribute: serve's policy allows that stylesheet alone.
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

Ticks nice_ticks(double lo, double hi, int intervals) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / intervals;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  double step = 10 * p;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * p >= raw * (1 - 1e-9)) {
      step = m * p;
      break;
    }
  }
  // The tolerance keeps a bound that is a multiple of the step from gaining
  // a step through rounding (0.3 / 0.1 is 2.9999999999999996).
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step};
}

std::string tick_text(double v, double step) {
  if (std::fabs(v) < step * 1e-6) return "0";
  if (step >= 1) {
    // Whole numbers; human_count's three significant digits above 10,000
    // (20.0k), unless the steps are finer than they show.
    return std::fabs(v) < 1e4 || step * 100 < std::fabs(v) ? fixed(v, 0) : human_count(v);
  }
  return fixed(v, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
}

// A range narrower than a tenth of the values' size is widened to that
// around them: a 0.1% difference in accuracy does not fill the chart.
Ticks fitted_axis(double lo, double hi, bool from_zero) {
  const bool unit_range = lo >= 0 && hi <= 1;
  if (from_zero) lo = std::min(lo, 0.0);
  const double least = 0.1 * std::max(std::fabs(lo), std::fabs(hi));
  if (!from_zero && hi - lo < least) {
    const double mid = (lo + hi) / 2;
    lo = mid - least / 2;
    hi = mid + least / 2;
  }
  double span = hi - lo;
  if (!(span > 0)) span = 1;
  double a = from_zero && lo >= 0 ? 0 : lo - 0.08 * span;
  double b = hi + 0.08 * span;
  if (unit_range) a = std::max(a, 0.0), b = std::min(b, 1.0);
  if (!(b > a)) b = a + (unit_range ? std::min(1.0 - a, 0.1) : 1);
  Ticks t = nice_ticks(a, b);
  if (unit_range) t.lo = std::max(t.lo, 0.0), t.hi = std::min(t.hi, 1.0);
  return t;
}

std::string chart_label(const ConfigSamples& c, const std::vector<std::string>& keys) {
  return "config " + std::to_string(c.config_index + 1) +
         (keys.empty() ? std::string(" (the base)") : ": " + config_label(c.config, keys));
}

namespace {

// A row chart's labels are wrapped at this many characters (11 px type in
// the 290 px left of the plot), each line this high.
constexpr size_t kLabelChars = 46;
constexpr double kLineHeight = 13;

// A label's lines: wrapped at spaces, a word longer than a line cut into
// lines of its own (a long value would otherwise run off the chart's edge),
// after its '=' where that is within the line.
std::vector<std::string> label_lines(const std::string& label) {
  std::vector<std::string> lines;
  std::istringstream wrapped(wrap(label, kLabelChars));
  for (std::string line; std::getline(wrapped, line);) {
    while (display_width(line) > kLabelChars) {
      size_t cut = 0;
      for (size_t n = 0; cut < line.size(); ++cut) {
        if ((static_cast<unsigned char>(line[cut]) & 0xC0) != 0x80 && n++ == kLabelChars) break;
      }
      const size_t equals = line.rfind('=', cut - 1);
      if (equals != std::string::npos && equals > 0) cut = equals + 1;
      lines.push_back(line.substr(0, cut));
      line = line.substr(cut);
    }
    lines.push_back(line);
  }
  if (lines.empty()) lines.emplace_back();
  return lines;
}

// A text's rough width in px at the charts' 11 px type, for keeping tick
// labels inside the chart.
double text_width(const std::string& text) {
  return 6.2 * static_cast<double>(display_width(text));
}

// Where a row chart's rows go: each as high as its label's lines need.
struct RowLayout {
  std::vector<std::vector<std::string>> lines;
  std::vector<double> top, height;
  double bottom = 10;  // below the last row
};

RowLayout layout_rows(const std::vector<std::string>& labels) {
  RowLayout r;
  for (const auto& label : labels) {
    r.lines.push_back(label_lines(label));
    const double h = std::max(22.0, 9 + kLineHeight * static_cast<double>(r.lines.back().size()));
    r.top.push_back(r.bottom);
    r.height.push_back(h);
    r.bottom += h;
  }
  return r;
}

// A label right-aligned at x, its first line's baseline at y, one <tspan> a line.
void label_text(std::ostringstream& s, double x, double y, const std::vector<std::string>& lines) {
  s << "<text class=\"label\" x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"end\">";
  for (size_t i = 0; i < lines.size(); ++i) {
    s << "<tspan x=\"" << num(x) << "\" dy=\"" << (i == 0 ? 0 : kLineHeight) << "\">"
      << html_escape(lines[i]) << "</tspan>";
  }
  s << "</text>";
}

// The value axis of a chart with one row per label: v's x position.
struct XAxis {
  double left, plot;
  Ticks ticks;
  double operator()(double v) const { return left + plot * (v - ticks.lo) / (ticks.hi - ticks.lo); }
};

// Opens a row chart's <svg> and draws its vertical grid lines, each labelled
// with its value below the rows, and the axis's caption (its unit) under them.
void open_row_chart(std::ostringstream& s, const std::string& name, double width, double rows_end,
                    const XAxis& x, const std::string& caption) {
  const double height = rows_end + 44;
  s << "<svg data-chart=\"" << name << "\" viewBox=\"0 0 " << width << " " << height
    << "\" width=\"" << width << "\" role=\"img\">";
  for (double v = x.ticks.lo; v <= x.ticks.hi + x.ticks.step * 1e-6; v += x.ticks.step) {
    s << "<line class=\"grid\" x1=\"" << num(x(v)) << "\" x2=\"" << num(x(v)) << "\" y1=\"6\" y2=\""
      << num(rows_end + 4) << "\"/>";
    tick_label(s, x(v), rows_end + 18, tick_text(v, x.ticks.step), width);
  }
  s << "<text class=\"caption\" x=\"" << num(x.left + x.plot / 2) << "\" y=\"" << num(height - 6)
    << "\" text-anchor=\"middle\">" << html_escape(caption) << "</text>";
}

}  // namespace

void tick_label(std::ostringstream& s, double x, double y, const std::string& text, double width) {
  const double half = text_width(text) / 2;
  const char* anchor = x + half > width - 2 ? "end" : x - half < 2 ? "start" : "middle";
  s << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" text-anchor=\"" << anchor << "\">"
    << html_escape(text) << "</text>";
}

// Horizontal bars with optional whiskers: one row per label.
std::string bar_chart(const std::string& name, const std::vector<std::string>& labels,
                      const std::vector<double>& values, const std::vector<double>& low,
                      const std::vector<double>& high, const std::vector<bool>& highlight,
                      const std::string& unit, std::optional<double> reference_line) {
  const double left = 300, width = 860, plot = width - left - 70;
  const RowLayout rows = layout_rows(labels);
  double vmax = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    vmax = std::max({vmax, values[i], high.empty() || std::isnan(high[i]) ? 0 : high[i]});
  }
  if (reference_line) vmax = std::max(vmax, *reference_line);
  const XAxis x{left, plot, nice_ticks(0, vmax > 0 ? vmax * 1.05 : 1)};
  const bool ratio = unit == "x";
  auto value_text = [&](double v) { return ratio ? fixed(v, 3) + "x" : human_count(v); };
  std::ostringstream s;
  open_row_chart(s, name, width, rows.bottom, x, ratio ? "ratio to the baseline" : unit);
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = rows.top[i], h = rows.height[i];
    const double first_line =
        y + h / 2 + 4 - kLineHeight * static_cast<double>(rows.lines[i].size() - 1) / 2;
    label_text(s, left - 8, first_line, rows.lines[i]);
    const double bar_y = y + h / 2 - 8;
    s << "<rect class=\"mark bar" << (highlight[i] ? " base" : "") << "\" x=\"" << num(left)
      << "\" y=\"" << num(bar_y) << "\" width=\"" << num(std::max(0.0, x(values[i]) - left))
      << "\" height=\"16\"><title>" << html_escape(labels[i]) << ": "
      << html_escape(ratio ? value_text(values[i]) : human_count(values[i]) + " " + unit)
      << "</title></rect>";
    const bool whisker = !low.empty() && !std::isnan(low[i]);
    if (whisker) {
      const double cy = y + h / 2;
      s << "<line class=\"whisker\" x1=\"" << num(x(low[i])) << "\" x2=\"" << num(x(high[i]))
        << "\" y1=\"" << num(cy) << "\" y2=\"" << num(cy) << "\"/>";
      for (double e : {low[i], high[i]}) {
        s << "<line class=\"whisker\" x1=\"" << num(x(e)) << "\" x2=\"" << num(x(e)) << "\" y1=\""
          << num(cy - 4) << "\" y2=\"" << num(cy + 4) << "\"/>";
      }
    }
    s << "<text class=\"value\" x=\"" << num(x(std::max(values[i], whisker ? high[i] : 0)) + 6)
      << "\" y=\"" << num(y + h / 2 + 4) << "\">" << html_escape(value_text(values[i]))
      << "</text>";
  }
  if (reference_line) {
    s << "<line class=\"one\" x1=\"" << num(x(*reference_line)) << "\" x2=\""
      << num(x(*reference_line)) << "\" y1=\"6\" y2=\"" << num(rows.bottom + 4) << "\"/>";
  }
  s << "<line class=\"axis\" x1=\"" << num(left) << "\" x2=\"" << num(left) << "\" y1=\"6\" y2=\""
    << num(rows.bottom + 4) << "\"/></svg>";
  return s.str();
}

// One row of dots per config: every block's throughput.
std::string strip_chart(const std::string& name, const std::vector<std::string>& labels,
                        const std::vector<std::vector<double>>& samples, const std::string& unit) {
  const double left = 300, width = 860, plot = width - left - 40;
  const RowLayout rows = layout_rows(labels);
  double vmax = 0;
  for (const auto& v : samples) {
    for (double a : v) vmax = std::max(vmax, a);
  }
  const XAxis x{left, plot, nice_ticks(0, vmax > 0 ? vmax * 1.05 : 1)};
  std::ostringstream s;
  open_row_chart(s, name, width, rows.bottom, x, unit + "/s");
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = rows.top[i] + rows.height[i] / 2;
    label_text(s, left - 8, y + 4 - kLineHeight * static_cast<double>(rows.lines[i].size() - 1) / 2,
               rows.lines[i]);
    for (size_t k = 0; k < samples[i].size(); ++k) {
      const double jitter = (static_cast<double>(k % 5) - 2) * 1.6;
      s << "<circle class=\"mark dot\" cx=\"" << num(x(samples[i][k])) << "\" cy=\""
        << num(y + jitter) << "\" r=\"3\"/>";
    }
  }
  s << "</svg>";
  return s.str();
}

// Scatter plot; flagged points (the Pareto front) are joined by a line, the
// baseline's drawn in its colour. The x axis starts at 0; the y axis fits
// its values (from 0 when y_from_zero).
std::string scatter(const std::string& name, const std::vector<Point>& pts,
                    const std::string& x_label, const std::string& y_label, bool join_flagged,
                    bool x_bytes, bool y_from_zero) {
  if (pts.empty()) {
    return "<svg data-chart=\"" + name +
           "\" viewBox=\"0 0 820 40\" width=\"820\" role=\"img\">"
           "<text x=\"10\" y=\"24\">no config reported " +
           html_escape(x_label + " and " + y_label) + "</text></svg>";
  }
  const double width = 820, height = 360, left = 70, bottom = 40, top = 14, right = 30;
  double xmax = pts[0].x, ymin = pts[0].y, ymax = pts[0].y;
  for (const auto& p : pts) {
    xmax = std::max(xmax, p.x);
    ymin = std::min(ymin, p.y);
    ymax = std::max(ymax, p.y);
  }
  const Ticks xt = nice_ticks(0, xmax > 0 ? xmax * 1.05 : 1);
  const Ticks yt = fitted_axis(ymin, ymax, y_from_zero);
  auto x = [&](double v) { return left + (width - left - right) * (v - xt.lo) / (xt.hi - xt.lo); };
  auto y = [&](double v) {
    return height - bottom - (height - bottom - top) * (v - yt.lo) / (yt.hi - yt.lo);
  };
  std::ostringstream s;
  s << "<svg data-chart=\"" << name << "\" viewBox=\"0 0 " << width << " " << height
    << "\" width=\"" << width << "\" role=\"img\">";
  for (double vx = xt.lo; vx <= xt.hi + xt.step * 1e-6; vx += xt.step) {
    s << "<line class=\"grid\" x1=\"" << num(x(vx)) << "\" x2=\"" << num(x(vx)) << "\" y1=\"" << top
      << "\" y2=\"" << num(height - bottom) << "\"/>";
    tick_label(s, x(vx), height - bottom + 16, x_bytes ? human_bytes(vx) : tick_text(vx, xt.step),
               width);
  }
  for (double vy = yt.lo; vy <= yt.hi + yt.step * 1e-6; vy += yt.step) {
    s << "<line class=\"grid\" x1=\"" << left << "\" x2=\"" << num(width - right) << "\" y1=\""
      << num(y(vy)) << "\" y2=\"" << num(y(vy)) << "\"/><text x=\"" << left - 6 << "\" y=\""
      << num(y(vy) + 4) << "\" text-anchor=\"end\">" << html_escape(tick_text(vy, yt.step))
      << "</text>";
  }
  s << "<text class=\"caption\" x=\"" << num((left + width - right) / 2) << "\" y=\""
    << num(height - 4) << "\" text-anchor=\"middle\">" << html_escape(x_label) << "</text>";
  s << "<text class=\"caption\" x=\"12\" y=\"" << num(height / 2)
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
  // The baseline's point last, on top of any it shares its place with.
  std::vector<const Point*> order;
  for (const auto& p : pts) order.push_back(&p);
  std::stable_partition(order.begin(), order.end(), [](const Point* p) { return !p->base; });
  for (const Point* q : order) {
    const Point& p = *q;
    s << "<circle class=\"mark pt" << (p.flag ? " front" : "") << (p.base ? " base" : "")
      << "\" cx=\"" << num(x(p.x)) << "\" cy=\"" << num(y(p.y)) << "\" r=\"5\"><title>"
      << html_escape(p.label) << "</title></circle>";
  }
  s << "</svg>";
  return s.str();
}

}  // namespace gpusweep::host::detail
