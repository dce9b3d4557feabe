// The HTML report's data-parallel scaling section: each config's speed-up
// over one rank against world_size, drawn as SVG, and its table.
#include "report/report.hpp"

#include "report/output.hpp"
#include "report/report_internal.hpp"
#include "support/format.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace gpusweep::host::detail {

// Data-parallel scaling (world_size > 1): throughput over one rank's
// against world_size, each config's interval as a whisker, from (1, 1),
// and the ideal line (N ranks, N times the throughput); the table beside.
// "" when no config has more than one rank.
// One SVG's axes, ideal line and marks, in drawing order.
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
    std::string label = "config " + std::to_string(r.config->config_index + 1);
    if (!others.empty()) label += ": " + config_label(r.config->config, others);
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

}  // namespace gpusweep::host::detail
