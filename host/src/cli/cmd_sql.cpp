// `gpusweep sql` (read-only queries) and `gpusweep export` (csv/json for
// pandas, spreadsheets and notebooks).
#include "cli/cli.hpp"
#include "support/error.hpp"
#include "report/output.hpp"
#include "report/results.hpp"

#include <gpusweep/db/store.hpp>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace gpusweep::host {

namespace {

void require_db(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw UsageError("no database at '" + path + "'; pass --db or run a sweep first");
  }
}

std::vector<Column> plain_columns(const std::vector<std::string>& names) {
  std::vector<Column> cols;
  for (const auto& n : names) {
    cols.push_back({n, n, false, [n](const Json& r) {
                      const Json& v = r.at(n);
                      if (v.is_null()) return std::string("NULL");
                      if (v.is_string()) return v.get<std::string>();
                      return v.dump();
                    }});
  }
  return cols;
}

}  // namespace

int cmd_sql(const Args& args) {
  po::options_description o;
  o.add_options()("query", po::value<std::string>()->required(), "one SQL statement");
  add_db_option(o);
  o.add_options()("format", po::value<std::string>()->default_value("table"),
                  "table, csv, json or md");
  po::positional_options_description pos;
  pos.add("query", 1);
  auto p = parse_command("sql", "\"SELECT ...\" [--db FILE] [--format F]",
                         "Runs one read-only SQL query on the results database (opened\n"
                         "read-only: statements that write fail and change nothing). The\n"
                         "schema and example queries are in db/README.md; the view\n"
                         "trial_results joins trials with their sweep and summary.",
                         o, pos, args);
  if (p.help) return 0;
  const OutputFormat format = parse_output_format(p.vm["format"].as<std::string>());
  const std::string path = p.vm["db"].as<std::string>();
  require_db(path);
  db::Store store(path, db::Connection::Mode::read_only);
  const std::string sql = p.vm["query"].as<std::string>();
  db::Store::QueryResult result;
  try {
    result = store.read_query(sql);
  } catch (const db::DbError& e) {
    throw UsageError(std::string("sql: ") + e.what());
  }
  std::cout << render(result.rows, plain_columns(result.columns), format);
  if (format == OutputFormat::table) std::cout << "(" << result.rows.size() << " rows)\n";
  return 0;
}

int cmd_export(const Args& args) {
  po::options_description o;
  o.add_options()("sweep", po::value<std::string>(), "sweep name (default: the latest run)");
  add_db_option(o);
  o.add_options()("format", po::value<std::string>()->default_value("csv"), "csv or json")(
      "blocks", po::bool_switch(), "one row per measured block instead of per trial")(
      "output,o", po::value<std::string>(), "write to this file instead of stdout");
  auto p = parse_command("export", "[--sweep NAME] [--format csv|json] [--blocks] [-o FILE]",
                         "Exports a sweep's trials (settings as columns, status, summary\n"
                         "statistics, quality) or its block samples, for pandas,\n"
                         "spreadsheets and notebooks.",
                         o, {}, args);
  if (p.help) return 0;
  const std::string fmt = p.vm["format"].as<std::string>();
  if (fmt != "csv" && fmt != "json") throw UsageError("--format " + fmt + ": export writes csv or json");
  const OutputFormat format = parse_output_format(fmt);
  const OpenedSweep run = open_sweep(p.vm);
  db::Store& store = *run.store;
  const db::SweepRecord* sweep = &run.sweep;
  const auto trials = store.trials(sweep->id);
  // Every setting of the plugin is a column, in a stable order.
  std::vector<std::string> settings;
  if (!trials.empty()) {
    const Json first = Json::parse(trials.front().plan.config_json);
    for (const auto& [k, v] : first.items()) settings.push_back(k);
  }
  std::vector<std::string> names = {"sweep", "trial_id", "config_index", "repeat", "status", "error"};
  for (const auto& s : settings) names.push_back(s);
  const bool per_block = p.vm["blocks"].as<bool>();
  if (per_block) {
    for (const char* n : {"block", "steps", "seconds", "samples", "throughput"}) names.push_back(n);
  } else {
    for (const char* n : {"unit", "throughput_median", "throughput_mean", "throughput_min",
                          "throughput_max", "throughput_iqr", "throughput_cv",
                          "step_time_median_s", "peak_memory_bytes", "input_wait_fraction",
                          "quality_metric", "quality", "quality_reference", "wall_s"}) {
      names.push_back(n);
    }
  }
  // Rows are streamed cell by cell: an export can be a million blocks.
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (p.vm.count("output") != 0U) {
    file.open(p.vm["output"].as<std::string>(), std::ios::binary);
    if (!file) throw Error("cannot write '" + p.vm["output"].as<std::string>() + "'");
    out = &file;
  }
  const bool csv = format == OutputFormat::csv;
  auto cell_text = [&](const Json& v) {
    if (v.is_null()) return std::string(csv ? "" : "null");
    if (v.is_string()) return csv ? csv_field(v.get<std::string>()) : v.dump();
    return v.dump();
  };
  // A row is written as the text of its cells, each after its separator and,
  // in json, its quoted column name. A trial's cells are rendered once and
  // its blocks' numbers appended with to_chars: an export can be a million
  // blocks, and building a Json per cell would cost seconds.
  std::vector<std::string> lead(names.size());
  for (size_t col = 0; col < names.size(); ++col) {
    if (col > 0) lead[col] = csv ? "," : ", ";
    if (!csv) lead[col] += Json(names[col]).dump() + ": ";
  }
  auto render_cells = [&](const std::vector<Json>& cells) {
    std::string text;
    for (size_t col = 0; col < cells.size(); ++col) text += lead[col] + cell_text(cells[col]);
    return text;
  };
  auto append_number = [&](std::string& text, size_t col, double v) {
    text += lead[col];
    if (!std::isfinite(v)) {
      if (!csv) text += "null";
      return;
    }
    char digits[32];
    const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    text.append(digits, end);
  };
  auto opt = [](const auto& o) { return o ? Json(*o) : Json(); };
  int64_t count = 0;
  std::string row;
  auto emit = [&](const std::string& text) {
    if (!csv) *out << (count == 0 ? "  {" : ",\n  {");
    *out << text << (csv ? "\n" : "}");
    ++count;
  };
  if (csv) {
    for (size_t i = 0; i < names.size(); ++i) *out << (i ? "," : "") << csv_field(names[i]);
    *out << "\n";
  } else {
    *out << "[\n";
  }
  for (const auto& t : trials) {
    std::vector<Json> cells = {sweep->name, t.id, t.plan.config_index, t.plan.repeat, t.status,
                               opt(t.error)};
    const Json config = Json::parse(t.plan.config_json);
    for (const auto& s : settings) cells.push_back(config.contains(s) ? config.at(s) : Json());
    if (per_block) {
      const std::string trial_text = render_cells(cells);
      const size_t first = cells.size();
      for (const auto& b : store.blocks(t.id)) {
        row = trial_text;
        append_number(row, first, static_cast<double>(b.idx));
        append_number(row, first + 1, static_cast<double>(b.steps));
        append_number(row, first + 2, b.seconds);
        append_number(row, first + 3, b.samples);
        append_number(row, first + 4, b.seconds > 0 ? b.samples / b.seconds : NAN);
        emit(row);
      }
      continue;
    }
    if (t.summary) {
      const auto& m = *t.summary;
      cells.insert(cells.end(),
                   {m.unit, m.throughput_median, m.throughput_mean, m.throughput_min,
                    m.throughput_max, m.throughput_iqr, m.throughput_cv, m.step_time_median_s,
                    opt(m.peak_memory_bytes), opt(m.input_wait_fraction), opt(m.quality_metric),
                    opt(m.quality), opt(m.quality_reference), opt(t.wall_s)});
    } else {
      cells.resize(names.size() - 1);
      cells.push_back(opt(t.wall_s));
    }
    emit(render_cells(cells));
  }
  if (!csv) *out << (count == 0 ? "]\n" : "\n]\n");
  out->flush();
  if (file.is_open()) {
    if (!file) throw Error("cannot write '" + p.vm["output"].as<std::string>() + "'");
    std::cerr << "wrote " << count << " rows to " << p.vm["output"].as<std::string>() << "\n";
  }
  return 0;
}

}  // namespace gpusweep::host
