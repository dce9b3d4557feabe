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

int run_sql(const po::variables_map& vm) {
  const OutputFormat format = parse_output_format(vm["format"].as<std::string>());
  const std::string path = vm["db"].as<std::string>();
  require_db(path);
  db::Store store(path, db::Connection::Mode::read_only);
  const std::string sql = vm["query"].as<std::string>();
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

}  // namespace

CommandDef cmd_sql() {
  return {"sql",
          "run a read-only SQL query on the results",
          "Runs one read-only SQL query on the results database (opened read-only: a\n"
          "statement that writes fails and changes nothing). The schema and example queries\n"
          "are in db/README.md; the view trial_results joins trials with their sweep and\n"
          "summary.",
          "",
          {text("query", "\"SELECT ...\"", "one SQL statement").required(), db_option(),
           format_option(
               {OutputFormat::table, OutputFormat::csv, OutputFormat::json, OutputFormat::md})},
          {"query"},
          {},
          run_sql};
}

}  // namespace gpusweep::host
