// The column helpers every table shares.
#include "report/output.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>

using namespace gpusweep::host;

TEST_CASE("intervals, ratios and verdicts show the same way in every table", "[report]") {
  CHECK(interval_text(0.9123, 1.03449) == "[0.912, 1.034]");
  CHECK(interval_text(NAN, 1.0) == "-");
  const std::vector<nlohmann::json> rows = {
      {{"ratio", 1.23456}, {"lo", 1.1}, {"hi", 1.4}, {"verdict", "faster"}},
      {{"ratio", nullptr}, {"lo", nullptr}, {"hi", nullptr}, {"verdict", "slower"}}};
  const std::vector<Column> cols = {
      ratio_column("ratio", "ratio"), interval_column("lo", "hi"),
      verdict_column("verdict", OutputFormat::md, "faster", "slower")};
  const std::string md = render(rows, cols, OutputFormat::md);
  CHECK(md.find("1.235x") != std::string::npos);
  CHECK(md.find("[1.100, 1.400]") != std::string::npos);
  CHECK(md.find("\x1b[") == std::string::npos);  // colour only in the table format
  const std::string csv = render(rows, cols, OutputFormat::csv);
  CHECK(csv.find("1.23456") != std::string::npos);  // machine formats keep raw values
}

TEST_CASE("a listing made a chunk at a time is the listing made at once, in every format",
          "[report]") {
  std::vector<nlohmann::json> rows;
  for (int i = 0; i < 2500; ++i) {  // three chunks, the last one short
    rows.push_back({{"n", i}, {"x", i * 0.5}, {"s", i % 7 == 0 ? "two\nlines" : "a|b,\"c\""}});
  }
  rows[3].erase("x");  // a record without a column's key
  const std::vector<Column> cols = {
      {"n", "#", true, {}}, {"x", "x", true, {}}, {"s", "s", false, {}}};
  const auto make = [&](size_t begin, size_t end) {
    return std::vector<nlohmann::json>(rows.begin() + static_cast<std::ptrdiff_t>(begin),
                                       rows.begin() + static_cast<std::ptrdiff_t>(end));
  };
  for (auto f : {OutputFormat::table, OutputFormat::csv, OutputFormat::json, OutputFormat::md}) {
    CHECK(render_chunks(rows.size(), make, cols, f) == render(rows, cols, f));
    CHECK(render_chunks(0, make, cols, f) == render({}, cols, f));
  }
  // JSON: every column in every element, an element a line with its keys
  // in the columns' order (as export writes it).
  nlohmann::json expected = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json o;
    for (const auto& c : cols) o[c.key] = r.contains(c.key) ? r.at(c.key) : nlohmann::json();
    expected.push_back(o);
  }
  const std::string json = render(rows, cols, OutputFormat::json);
  CHECK(nlohmann::json::parse(json) == expected);
  CHECK(json.rfind("[\n  {\"n\": 0, \"x\": 0.0, \"s\": \"two\\nlines\"},\n  {\"n\": 1, ", 0) == 0);
  CHECK(std::count(json.begin(), json.end(), '\n') == static_cast<std::ptrdiff_t>(rows.size()) + 2);
  CHECK(render({}, cols, OutputFormat::json) == "[]\n");
  // The table: a cell of two lines takes two physical lines, the others padded.
  const std::string table = render(make(0, 2), cols, OutputFormat::table);
  CHECK(table ==
        "#     x  s\n"
        "-  ----  -------\n"
        "0  0.00  two\n"
        "         lines\n"
        "1  0.50  a|b,\"c\"\n");
}
