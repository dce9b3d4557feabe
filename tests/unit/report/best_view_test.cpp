// `gpusweep best`'s text and JSON views.
#include "report/best_view.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;

TEST_CASE("best without an eligible config says so, in text and in JSON", "[report]") {
  BestChoice none;
  none.configs = 3;
  CHECK(render_best(none, "s").find("no config of sweep 's' meets the constraints (3 configs)") ==
        0);
  const Json doc = best_json(none, "s");
  CHECK(doc.at("best").is_null());
  CHECK(doc.at("configs") == 3);
}

TEST_CASE("best's views show the winner, its ratio to the baseline and the snippet", "[report]") {
  BestChoice b;
  b.configs = 3;
  b.eligible = 2;
  b.config_index = 1;
  b.unit = "samples";
  b.metrics = {{"throughput", 200}, {"step_time", 0.32}, {"peak_memory", 3.0 * (1 << 30)}};
  b.baseline = {{"throughput", 100}};
  b.base = {{"batch_size", 64}};
  const std::string text = render_best(b, "s");
  CHECK(text.find("config #2") != std::string::npos);
  CHECK(text.find("2.00x the baseline") != std::string::npos);
  CHECK(text.find("\"batch_size\": 64") != std::string::npos);
  const Json doc = best_json(b, "s");
  CHECK(doc.at("best").at("config") == 2);
  CHECK(doc.at("best").at("throughput_ratio") == Approx(2.0));
  CHECK(doc.at("best").at("snippet") == Json{{"base", {{"batch_size", 64}}}});
}
