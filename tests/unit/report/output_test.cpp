// The column helpers every table shares.
#include "report/output.hpp"

#include <catch2/catch.hpp>

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
