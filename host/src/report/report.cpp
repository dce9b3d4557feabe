// The HTML report; see report.hpp. This file gathers what the page shows
// (the comparison, the charts' data) and puts the page's sections together
// in order; the sections are in report_sections.cpp, report_scaling.cpp and
// report_target.cpp, the SVG charts in report_charts.cpp.
#include "report/report.hpp"

#include "analysis/pareto.hpp"

#include "analysis/compare.hpp"
#include "analysis/scaling.hpp"
#include "report/report_internal.hpp"
#include "report/results.hpp"
#include "support/descriptive.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpusweep::host {

namespace detail {
namespace {

// Per-config charts show at most this many configs: the baseline and the
// fastest others. Beyond a few dozen rows a chart can't be read, and the
// comparison table below lists every config anyway.
constexpr size_t kMaxChartedConfigs = 40;

ChartData chart_data(const std::vector<ComparisonRow>& rows, const std::vector<std::string>& keys) {
  ChartData d;
  // Each charted config's blocks: their interval and strip are made for the
  // configs the charts keep (the slowest of 10,000 are left out).
  std::vector<const std::vector<double>*> blocks;
  for (const auto& r : rows) {
    const auto& c = *r.config;
    if (c.throughput.empty()) continue;
    d.unit = c.unit;
    const std::string label = chart_label(c, keys);
    d.labels.push_back(label);
    const double med = quantile(c.throughput, 0.5);
    d.medians.push_back(med);
    blocks.push_back(&c.throughput);
    d.is_base.push_back(r.baseline);
    d.ratio.push_back(r.baseline ? 1.0 : r.ratio ? r.ratio->ratio : NAN);
    d.rlow.push_back(r.ratio ? r.ratio->low : NAN);
    d.rhigh.push_back(r.ratio ? r.ratio->high : NAN);
    if (c.peak_memory_bytes) {
      d.mem_pts.push_back({*c.peak_memory_bytes, med, label, false, r.baseline});
    }
    if (!c.quality.empty()) {
      double q = 0;
      for (const auto& v : c.quality) q += v.value;
      d.quality_pts.push_back(
          {med, q / static_cast<double>(c.quality.size()), label, false, r.baseline});
    }
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
    const LogSummary s = log_summary(*b);
    d.lows.push_back(s.low);
    d.highs.push_back(s.high);
    d.samples.push_back(*b);
  }
  return d;
}

}  // namespace
}  // namespace detail

std::string render_report(db::Store& store, const db::SweepRecord& sweep, bool selection_data) {
  const SweepSpec spec = stored_spec(sweep);
  const auto keys = varying_keys(spec);
  const Rounds rounds = rounds_for(spec, selection_data);
  std::vector<StoredTrial> trials;
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
  const detail::ChartData d = detail::chart_data(rows, keys);
  std::string pick;
  try {
    pick = detail::best_html(best_pick(store, sweep, spec, configs, rounds));
  } catch (const std::exception& e) {
    pick = "<p class=\"note\">No pick: " + html_escape(e.what()) + "</p>";
  }
  std::string knobs;
  try {
    knobs = detail::knobs_html(ablation(configs, spec.grid, opt));
  } catch (const std::exception& e) {
    knobs = "<p class=\"note\">No knob table: " + html_escape(e.what()) + "</p>";
  }
  return detail::header_html(sweep, spec, trials.size()) + pick +
         detail::race_html(store, sweep, spec, rounds) + detail::charts_html(d, compare_problem) +
         detail::comparison_html(rows, keys, opt.max_quality_loss) + knobs +
         detail::scaling_html(scaling(configs, opt), keys) +
         detail::target_html(store, trials, spec, rows, opt, keys) + detail::distributions_html(d) +
         detail::claims_html(store, sweep, spec) + detail::environment_html(store, sweep) +
         detail::problems_html(trials, keys) +
         "<p class=\"note\">Generated by gpusweep from the results database.</p></body></html>\n";
}

}  // namespace gpusweep::host
