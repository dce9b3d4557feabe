// `gpusweep history --html` (report/history_page.hpp): a chart a series,
// with a change-point line where the level stepped and none where it did
// not, the changes of software marked, and the listing under each chart.
#include "report/history_page.hpp"
#include "analysis/history.hpp"
#include "report/report.hpp"

#include "history_runs.hpp"
#include "temp_dir.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using test::RunSpec;
using test::write_run;

namespace {

// How often `needle` occurs in `text`.
size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Chart i's <svg> (from 1), whole.
std::string chart(const std::string& html, int i) {
  const auto start = html.find("<svg data-chart=\"history-" + std::to_string(i) + "\"");
  REQUIRE(start != std::string::npos);
  return html.substr(start, html.find("</svg>", start) - start);
}

// The page of 10 runs of noop (two configs), 10% slower from the 6th run
// when `step`, with a new torch from the 8th.
std::string page(bool step) {
  test::TempDir dir("history_page");
  const std::string path = dir.file("h.db");
  {
    db::Store store(path, db::Connection::Mode::read_write);
    for (int i = 0; i < 10; ++i) {
      RunSpec r;
      if (step && i >= 5) r.level = 900, r.hash = "0badc0de00000000";
      if (i >= 7) r.torch = "2.16.0";
      write_run(store, i, r);
    }
  }
  db::Store store(path, db::Connection::Mode::read_only);
  HistoryFilter filter;
  filter.workload = "noop";
  return history_html(history_series(read_history(store, path, "noop"), filter), "noop", path);
}

}  // namespace

TEST_CASE("the history page draws a chart a series with the step marked", "[history][html]") {
  const std::string html = page(true);
  CHECK(count(html, "<svg data-chart=\"history-") == 2);
  CHECK(count(html, "<style>") == 1);
  CHECK_THAT(html, Catch::Contains(report_css()));
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find(" style=") == std::string::npos);
  for (int i = 1; i <= 2; ++i) {
    INFO("series " << i);
    const std::string svg = chart(html, i);
    CHECK(count(svg, "class=\"mark pt\"") == 10);
    CHECK(count(svg, "class=\"whisker\"") == 30);  // a line and two caps a run
    // One change point, at run 6, labelled with its ratio and p.
    CHECK(count(svg, "class=\"cp\"") == 1);
    CHECK_THAT(svg, Catch::Contains("class=\"cp\" data-run=\"6\""));
    CHECK_THAT(
        svg, Catch::Matches(".*class=\"cp-label\"[^>]*>0\\.(899|90[01])x, split p [^<]+</text>.*"));
    // Two levels, and the new build and the new torch marked.
    CHECK(count(svg, "class=\"level\"") == 2);
    CHECK(count(svg, "class=\"env\"") == 2);
    CHECK_THAT(svg, Catch::Contains("<title>run 8: torch 2.15.0 -&gt; 2.16.0</title>"));
    CHECK_THAT(svg, Catch::Contains("<title>run 6: build 1.1.0 a411f1e6 -&gt; 1.1.0 0badc0de"));
  }
  // The listing under each chart, as the table format shows it.
  CHECK(count(html, "<table>") == 2);
  CHECK_THAT(html, Catch::Contains("<th>change point</th>"));
  CHECK_THAT(html, Catch::Contains("change point at run 6"));
}

TEST_CASE("the history page of a flat series marks no change point", "[history][html]") {
  const std::string html = page(false);
  CHECK(count(html, "<svg data-chart=\"history-") == 2);
  for (int i = 1; i <= 2; ++i) {
    const std::string svg = chart(html, i);
    CHECK(count(svg, "class=\"mark pt\"") == 10);
    CHECK(count(svg, "class=\"cp\"") == 0);
    CHECK(count(svg, "class=\"level\"") == 1);
    CHECK(count(svg, "class=\"env\"") == 1);  // the torch, still marked
  }
  CHECK_THAT(html, Catch::Contains("no change point (p &lt; 0.001)"));
}

TEST_CASE("the history page says when no run matches", "[history][html]") {
  const std::string html = history_html(HistoryResult{}, "nothing", "none.db");
  CHECK_THAT(html, Catch::Contains("No finished run matches."));
  CHECK(html.find("<svg") == std::string::npos);
}
