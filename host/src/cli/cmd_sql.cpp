// `gpusweep sql`: one read-only query on the results database.
#include "cli/cli.hpp"
#include "report/output.hpp"
#include "support/error.hpp"

#include <gpusweep/db/store.hpp>

#include <filesystem>
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

}  // namespace gpusweep::host
