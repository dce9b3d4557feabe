// `gpusweep history`'s views; see history_view.hpp.
#include "report/history_view.hpp"

#include "spec/sweep.hpp"
#include "support/format.hpp"

#include <cmath>
#include <cstdio>

namespace gpusweep::host {

const char* const kHistoryMethod =
    "E-divisive means with a t-test (Apache Otava) on log throughput, each run's standard error "
    "a floor under its segment's variance";
const char* const kHistoryInterval =
    "95% t interval of the geometric mean of the per-repeat median throughputs (log scale, "
    "repeats - 1 degrees of freedom): the run's own spread, not the run-to-run spread";

namespace {

Json change_point_json(const HistorySeries& s, const ChangePoint& cp) {
  const HistoryPoint& p = s.points[cp.index];
  return {{"index", cp.index},          {"run", p.run_id},       {"created_at", p.created_at},
          {"ratio", cp.ratio},          {"p_value", cp.p_value}, {"before", std::exp(cp.before)},
          {"after", std::exp(cp.after)}};
}

Json point_json(const HistoryPoint& p) {
  auto number = [](double v) { return std::isfinite(v) ? Json(v) : Json(); };
  Json changes = Json::array();
  for (const auto& c : p.changes) changes.push_back(c);
  return {{"created_at", p.created_at},
          {"db", p.source},
          {"run", p.run_id},
          {"name", p.run_name},
          {"build", p.versions.build},
          {"plugin_path", p.plugin_path},
          {"throughput", p.throughput},
          {"low", number(p.low)},
          {"high", number(p.high)},
          {"log_se", p.log_se},
          {"repeats", p.repeat_medians.size()},
          {"torch", p.versions.torch},
          {"cuda", p.versions.cuda},
          {"driver_cuda", p.versions.driver},
          {"gpusweep", p.versions.gpusweep},
          {"python", p.versions.python},
          {"packages", p.versions.packages},
          {"changes", changes},
          {"change_point", p.change_point ? Json{{"ratio", p.change_point->ratio},
                                                 {"p_value", p.change_point->p_value}}
                                          : Json()}};
}

// One record a point, with its series' fields, for the flat formats.
Json point_record(const HistoryResult& result, size_t series, const HistoryPoint& p) {
  const HistorySeries& s = result.series[series];
  Json r = point_json(p);
  r["series"] = series + 1;
  r["workload"] = s.workload;
  r["machine"] = s.machine;
  r["config"] = s.config.dump();
  r["config_label"] = history_series_label(result, s);
  r["unit"] = s.unit;
  std::string changes;
  for (const auto& c : p.changes) changes += (changes.empty() ? "" : "; ") + c;
  r["changes"] = changes;
  r["change_point"] = p.change_point ? history_change_text(*p.change_point) : "";
  return r;
}

std::string series_heading(const HistoryResult& result, size_t i, OutputFormat format) {
  const HistorySeries& s = result.series[i];
  const bool md = format == OutputFormat::md;
  std::string out = (md ? "## " : "") + std::string("series ") + std::to_string(i + 1) + ": " +
                    s.workload + ", " + history_series_label(result, s) + ", on " + s.machine +
                    "\n" + (md ? "\n" : "");
  for (const auto& line : history_notes(result, i)) out += (md ? "- " : "") + line + "\n";
  return out + (md ? "\n" : "");
}

std::vector<Column> table_columns(const std::string& unit) {
  return {{"created_at", "when", false,
           [](const Json& r) {
             std::string w = r["created_at"].get<std::string>().substr(0, 16);
             if (w.size() > 10) w[10] = ' ';
             return w;
           }},
          {"run", "run", true, {}},
          {"name", "name", false, {}},
          {"build", "build", false, {}},
          {"throughput", "throughput", true,
           [unit](const Json& r) { return human_rate(r["throughput"].get<double>(), unit); }},
          {"low", "95% CI", true,
           [](const Json& r) {
             return r["low"].is_null() ? std::string("-")
                                       : "[" + human_count(r["low"].get<double>()) + ", " +
                                             human_count(r["high"].get<double>()) + "]";
           }},
          {"repeats", "n", true, {}},
          {"change_point", "change point", false, {}},
          {"changes", "environment or build changed", false, {}}};
}

}  // namespace

std::string history_series_label(const HistoryResult& result, const HistorySeries& s) {
  const auto keys = result.varying.find(s.workload);
  const std::string label =
      keys == result.varying.end() ? "" : config_label(s.config, keys->second);
  return label.empty() ? "its one config" : label;
}

std::string max_p_text(const ChangePointOptions& options) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", options.max_p);
  return text;
}

std::string history_change_text(const ChangePoint& cp) {
  return fixed(cp.ratio, 3) + "x, split p " +
         (cp.p_value < 0.0001 ? "<0.0001" : fixed(cp.p_value, 4));
}

std::vector<std::string> history_notes(const HistoryResult& result, size_t i) {
  const HistorySeries& s = result.series[i];
  const HistoryVersions& first = s.points.front().versions;
  // A plugin without LibTorch (a test fixture, a plain C++ workload) names none.
  auto known = [](const std::string& v) { return v.empty() ? std::string("none") : v; };
  std::vector<std::string> lines = {
      "first point's software: build " + first.build + ", torch " + known(first.torch) + ", CUDA " +
      known(first.cuda) + ", driver CUDA " + known(first.driver) + ", gpusweep " + first.gpusweep +
      (first.python.empty()
           ? ""
           : ", python " + first.python +
                 (first.packages.empty() ? "" : " (" + packages_text(first.packages, true) + ")"))};
  if (!result.since.empty()) {
    lines.push_back("runs from " + result.since + " on (--since): earlier ones are left out");
  }
  const size_t need = 2 * result.options.min_segment;
  if (s.too_short) {
    lines.push_back(std::to_string(s.points.size()) + " point" + (s.points.size() == 1 ? "" : "s") +
                    ": a change point needs at least " + std::to_string(need) + " (a segment of " +
                    std::to_string(result.options.min_segment) +
                    " on each side); none can be found yet");
  } else if (s.change_points.empty()) {
    lines.push_back("no change point (p < " + max_p_text(result.options) + ")");
  }
  for (const auto& cp : s.change_points) {
    lines.push_back("change point at run " + std::to_string(s.points[cp.index].run_id) + " (" +
                    s.points[cp.index].created_at + "): " + history_change_text(cp));
  }
  if (!s.change_points.empty()) {
    lines.push_back(
        "split p: the t-test on the split the search chose, not corrected for the search "
        "(about 3% of stationary 100-run series show a false point at p < 1e-5): a reason "
        "to look, and `history --confirm` to tell");
  }
  return lines;
}

TextTable history_table(const HistoryResult& result, size_t i) {
  std::vector<Json> records;
  for (const auto& p : result.series[i].points) records.push_back(point_record(result, i, p));
  return table_cells(records, table_columns(result.series[i].unit));
}

Json history_json(const HistoryResult& result) {
  Json series = Json::array();
  for (const auto& s : result.series) {
    Json cps = Json::array();
    for (const auto& cp : s.change_points) cps.push_back(change_point_json(s, cp));
    Json points = Json::array();
    for (const auto& p : s.points) points.push_back(point_json(p));
    series.push_back({{"workload", s.workload},
                      {"machine", s.machine},
                      {"config", s.config},
                      {"config_label", history_series_label(result, s)},
                      {"unit", s.unit},
                      {"too_short", s.too_short},
                      {"change_points", cps},
                      {"points", points}});
  }
  const ChangePointOptions& o = result.options;
  return {{"method",
           {{"change_points", kHistoryMethod},
            {"max_p", o.max_p},
            {"window", o.window},
            {"min_segment", o.min_segment},
            {"interval", kHistoryInterval},
            {"since", result.since.empty() ? Json() : Json(result.since)}}},
          {"series", series}};
}

std::string history_listing(const HistoryResult& result, OutputFormat format) {
  if (format == OutputFormat::json) return history_json(result).dump(2) + "\n";
  if (format == OutputFormat::csv) {
    std::vector<Json> records;
    for (size_t i = 0; i < result.series.size(); ++i) {
      for (const auto& p : result.series[i].points) records.push_back(point_record(result, i, p));
    }
    std::vector<Column> columns;
    for (const char* k :
         {"series", "workload",    "machine",  "config_label", "config",      "created_at",
          "db",     "run",         "name",     "build",        "plugin_path", "throughput",
          "unit",   "low",         "high",     "log_se",       "repeats",     "torch",
          "cuda",   "driver_cuda", "gpusweep", "changes",      "change_point"}) {
      columns.push_back({k, k, false, {}});
    }
    return render(records, columns, format);
  }
  if (result.series.empty()) return "no finished run matches\n";
  std::string out;
  for (size_t i = 0; i < result.series.size(); ++i) {
    std::vector<Json> records;
    for (const auto& p : result.series[i].points) records.push_back(point_record(result, i, p));
    out += (i == 0 ? "" : "\n") + series_heading(result, i, format) +
           render(records, table_columns(result.series[i].unit), format);
  }
  return out;
}

}  // namespace gpusweep::host
