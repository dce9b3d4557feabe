// Constraint parsing for `gpusweep best`, with clear errors for bad input.
#include "analysis/constraints.hpp"

#include "support/error.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("constraints parse metrics, units, settings and baseline factors", "[host][best]") {
  auto c = parse_constraint("peak_memory<8GiB");
  CHECK(c.name == "peak_memory");
  CHECK(c.op == CompareOp::lt);
  CHECK(c.value == 8.0 * 1024 * 1024 * 1024);
  c = parse_constraint("quality >= 0.99*baseline");
  CHECK(c.name == "quality");
  CHECK(c.op == CompareOp::ge);
  CHECK(c.relative_to_baseline);
  CHECK(c.value == Approx(0.99));
  CHECK(parse_constraint("step_time<=2ms").value == Approx(0.002));
  CHECK(parse_constraint("input_wait<5%").value == Approx(0.05));
  CHECK(parse_constraint("batch_size<=256").value == 256);
  CHECK(*parse_constraint("precision==bf16").text_value == "bf16");

  const nlohmann::json config = {{"batch_size", 128}, {"precision", "bf16"}, {"flag", true}};
  const std::map<std::string, double> metrics = {{"peak_memory", 1e9}, {"quality", 0.95}};
  const std::map<std::string, double> base = {{"quality", 1.0}};
  CHECK(satisfies(parse_constraint("peak_memory<8GiB"), metrics, config, base));
  CHECK_FALSE(satisfies(parse_constraint("peak_memory<500MB"), metrics, config, base));
  CHECK_FALSE(satisfies(parse_constraint("quality>=0.99*baseline"), metrics, config, base));
  CHECK(satisfies(parse_constraint("quality>=0.9*baseline"), metrics, config, base));
  CHECK(satisfies(parse_constraint("batch_size<=256"), metrics, config, base));
  CHECK(satisfies(parse_constraint("precision==bf16"), metrics, config, base));
  CHECK_FALSE(satisfies(parse_constraint("precision!=bf16"), metrics, config, base));
  CHECK(satisfies(parse_constraint("flag==1"), metrics, config, base));
  // A metric the config does not report fails rather than passes.
  CHECK_FALSE(satisfies(parse_constraint("throughput>1"), metrics, config, base));
}

TEST_CASE("bad constraints say what is wrong and how to write them", "[host][best]") {
  auto error = [](const std::string& text) -> std::string {
    try {
      parse_constraint(text);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error("peak_memory"), Contains("expected NAME OP VALUE"));
  CHECK_THAT(error("<5"), Contains("expected NAME OP VALUE"));
  CHECK_THAT(error("peak_memory<"), Contains("missing the value"));
  CHECK_THAT(error("peak_memory<8XB"), Contains("unknown unit 'XB'"));
  CHECK_THAT(error("peak_memory<lots"), Contains("not a number"));
  CHECK_THAT(error("batch_size<=0.5*baseline"), Contains("only metrics"));
}
