// `gpusweep best`'s text and JSON views.
#include "report/best_view.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;

TEST_CASE("best without an eligible config says why, in text and in JSON", "[report]") {
  BestChoice none;
  none.configs = 3;
  CHECK(render_best(none, "s").find("nothing of sweep 's' ran ok") == 0);
  none.ran_ok = 2;
  none.constraints = 1;
  CHECK(render_best(none, "s").find("no config of sweep 's' meets the constraints (2 of 3") == 0);
  none.constraints = 0;
  CHECK(render_best(none, "s").find("meets the constraints") == std::string::npos);
  const Json doc = best_json(none, "s");
  CHECK(doc.at("best").is_null());
  CHECK(doc.at("configs") == 3);
  CHECK(doc.at("why").get<std::string>().find("throughput") != std::string::npos);
}

TEST_CASE("best's views show the pick, compare's ratio to the baseline, ties and the snippet",
          "[report]") {
  BestChoice b;
  b.configs = 3;
  b.eligible = 2;
  b.config_index = 1;
  b.leader = 2;
  b.tied = {1, 2};
  b.rule = "the one changing the fewest settings";
  b.unit = "samples";
  b.metrics = {{"throughput", 200}, {"step_time", 0.32}, {"peak_memory", 3.0 * (1 << 30)}};
  b.baseline = {{"throughput", 100}};
  RatioEstimate r;
  r.ratio = 2.0;
  r.low = 1.9;
  r.high = 2.1;
  b.ratio = r;
  b.verdict = Verdict::faster;
  b.base = {{"batch_size", 64}};
  const std::string text = render_best(b, "s");
  CHECK(text.find("config 2\n") != std::string::npos);
  CHECK(text.find("2.000x the baseline [1.900, 2.100] (faster)") != std::string::npos);
  CHECK(text.find("tie: configs 2 and 3") != std::string::npos);
  CHECK(text.find("\"batch_size\": 64") != std::string::npos);
  const Json doc = best_json(b, "s");
  CHECK(doc.at("best").at("config") == 2);
  CHECK(doc.at("best").at("throughput_ratio") == Approx(2.0));
  CHECK(doc.at("best").at("ci_low") == Approx(1.9));
  CHECK(doc.at("best").at("tied") == Json{2, 3});
  CHECK(doc.at("best").at("snippet") == Json{{"base", {{"batch_size", 64}}}});
}
