// The HTML report as a reader sees it: each config named by every setting
// that varies (two configs differing only in their last setting read
// differently), a quality in [0, 1] drawn within [0, 1] and close to its
// values, the baseline in one colour, compare's knob table and best's pick
// in the page, and nothing styled outside its one stylesheet.
#include "report/report.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <set>

using namespace gpusweep;
using namespace gpusweep::host;

namespace {

// Three knobs with long values: labels cut at 40 or so characters read the
// same for configs that differ only in the last.
const char* kSpec = R"({"name": "labels", "workload": "noop",
  "grid": {"optimizer_implementation": ["adamw_fused_foreach", "adamw_plain"],
           "activation_checkpointing_policy": ["every_second_block", "none"],
           "matmul_precision": ["highest", "high"]},
  "baseline": {"optimizer_implementation": "adamw_fused_foreach",
               "activation_checkpointing_policy": "every_second_block",
               "matmul_precision": "highest"},
  "measure": {"repeats": 3}})";

const char* kConfigs[] = {
    R"({"optimizer_implementation": "adamw_fused_foreach", "activation_checkpointing_policy": "every_second_block", "matmul_precision": "highest"})",
    R"({"optimizer_implementation": "adamw_fused_foreach", "activation_checkpointing_policy": "every_second_block", "matmul_precision": "high"})",
};

// Two configs x 3 repeats, each trial 5 blocks at about `rate` samples/s
// (config 2 about 10% faster) and a quality near 0.95.
int64_t make_run(db::Store& store) {
  db::SweepRecord s;
  s.name = "labels";
  s.workload = "noop";
  s.spec_json = kSpec;
  s.spec_hash = "h";
  s.status = db::SweepStatus::finished;
  std::vector<db::TrialPlan> plans;
  for (int64_t i = 0; i < 6; ++i) {
    db::TrialPlan p;
    p.ordinal = i;
    p.config_index = i % 2;
    p.repeat = i / 2;
    p.workload = "noop";
    p.plugin_version = "1";
    p.config_json = kConfigs[i % 2];
    p.config_hash = std::to_string(i % 2);
    plans.push_back(p);
  }
  const int64_t id = store.create_sweep(s, plans);
  for (const auto& t : store.trials(id)) {
    const double rate = (t.plan.config_index == 0 ? 1000 : 1100) + 7.0 * t.plan.repeat;
    db::TrialOutcome o;
    o.status = db::TrialStatus::ok;
    o.started_at = o.finished_at = "2026-11-28T00:00:00.000Z";
    o.wall_s = 1;
    db::Summary m;
    m.unit = "samples";
    m.steps_per_block = 10;
    m.blocks = 5;
    m.throughput_median = rate;
    m.step_time_median_s = 10 / rate;
    m.quality_metric = "accuracy";
    m.quality = 0.95 + 0.004 * static_cast<double>(t.plan.config_index) + 0.001 * t.plan.repeat;
    m.quality_higher_is_better = true;
    o.summary = m;
    for (int b = 0; b < 5; ++b) {
      const double r = rate * (1 + 0.002 * (b % 3));
      o.blocks.push_back({b, 10, 10 * 10 / r, 10 * 10, 0, b, {}});
    }
    store.commit_trial(t.id, o);
  }
  return id;
}

// The <svg data-chart=NAME> of the page.
std::string chart(const std::string& html, const std::string& name) {
  std::smatch m;
  REQUIRE(std::regex_search(html, m, std::regex("<svg data-chart=\"" + name + "\"[^]*?</svg>")));
  return m.str();
}

// The row labels of a chart, each label's lines joined by a space.
std::vector<std::string> row_labels(const std::string& svg) {
  std::vector<std::string> out;
  const std::regex label("<text class=\"label\"[^>]*>([^]*?)</text>");
  const std::regex line("<tspan[^>]*>([^<]*)</tspan>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator();
       ++it) {
    const std::string inner = (*it)[1];
    std::string text;
    for (auto l = std::sregex_iterator(inner.begin(), inner.end(), line);
         l != std::sregex_iterator(); ++l) {
      text += (text.empty() ? "" : " ") + (*l)[1].str();
    }
    out.push_back(text);
  }
  return out;
}

}  // namespace

TEST_CASE("the report names each config by every setting that varies, whole", "[report]") {
  test::TempDir dir("report_labels");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = make_run(store);
  const std::string html = render_report(store, *store.sweep(id));
  // Each label whole, its lines joined (a long setting may be cut into two
  // lines, so the comparison leaves out the spaces between them).
  auto squeezed = [](std::string text) {
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    return text;
  };
  for (const char* name : {"throughput", "blocks"}) {
    INFO(name);
    const auto labels = row_labels(chart(html, name));
    REQUIRE(labels.size() == 2);
    CHECK(labels[0] != labels[1]);
    CHECK(squeezed(labels[0]) ==
          squeezed("config 1: activation_checkpointing_policy=every_second_block "
                   "matmul_precision=highest optimizer_implementation=adamw_fused_foreach"));
    CHECK(squeezed(labels[1]) ==
          squeezed("config 2: activation_checkpointing_policy=every_second_block "
                   "matmul_precision=high optimizer_implementation=adamw_fused_foreach"));
  }
}

TEST_CASE("a quality in [0, 1] is drawn within [0, 1], close to its values", "[report]") {
  test::TempDir dir("report_quality");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = make_run(store);
  const std::string svg = chart(render_report(store, *store.sweep(id)), "quality");
  // The y axis' tick labels (right-aligned left of the plot).
  std::vector<double> ticks;
  const std::regex tick("<text x=\"64\" y=\"[^\"]*\" text-anchor=\"end\">([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator();
       ++it) {
    ticks.push_back(std::stod((*it)[1]));
  }
  REQUIRE(ticks.size() >= 3);
  const auto [lo, hi] = std::minmax_element(ticks.begin(), ticks.end());
  INFO("the quality axis runs from " << *lo << " to " << *hi);
  CHECK(*hi <= 1.0);
  CHECK(*hi >= 0.955);  // the best config's mean quality is on the chart
  CHECK(*lo >= 0.8);    // and the axis is not stretched to 0 under it
}

TEST_CASE("the report draws the baseline in one colour and says so in the same word", "[report]") {
  test::TempDir dir("report_colours");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = make_run(store);
  const std::string html = render_report(store, *store.sweep(id));
  std::set<std::string> words;
  const std::regex said("the baseline(?:'s curves)? in (\\w+)");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), said); it != std::sregex_iterator();
       ++it) {
    words.insert((*it)[1]);
  }
  CHECK(words == std::set<std::string>{"purple"});
  // Its marks in the charts that show it carry the baseline's class.
  CHECK_THAT(chart(html, "throughput"), Catch::Contains("class=\"mark bar base\""));
  CHECK_THAT(chart(html, "quality"), Catch::Contains("class=\"mark pt base\""));
  // One stylesheet and no style attribute: serve's policy allows that
  // stylesheet by hash, so a style set elsewhere would not apply.
  CHECK(html.find("style=") == std::string::npos);
  const auto open = html.find("<style>");
  REQUIRE(open != std::string::npos);
  CHECK(html.find("<style", open + 1) == std::string::npos);
  CHECK(html.substr(open + 7, report_css().size()) == report_css());
}

TEST_CASE("the report carries compare's knob table and best's pick", "[report]") {
  test::TempDir dir("report_knobs");
  db::Store store(dir.file("r.db"), db::Connection::Mode::read_write);
  const int64_t id = make_run(store);
  const std::string html = render_report(store, *store.sweep(id));
  const auto knobs = html.find("<h2>Which knob matters</h2>");
  REQUIRE(knobs != std::string::npos);
  // matmul_precision is the one knob whose values both ran beside the same
  // others: highest to high, with its ratio.
  CHECK(html.find("<td>matmul_precision</td><td>highest</td><td>high</td>", knobs) !=
        std::string::npos);
  std::smatch pick;
  REQUIRE(std::regex_search(html, pick, std::regex("<pre data-section=\"best\">([^<]*)</pre>")));
  // Config 2 is 10% faster with 3 repeats: best picks it.
  CHECK_THAT(pick[1].str(), Catch::Contains("by throughput: config 2"));
  // compare's note column is in the comparison table.
  CHECK(html.find("<th>note</th>") != std::string::npos);
}
