// A sweep's tune settings: parsed once with the sweep, stored as the file
// wrote them by a plain run and as the race's own record by tune's.
#include "spec/sweep.hpp"
#include "spec/tune.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

TEST_CASE("a sweep's tune settings are stored as written until a race records its own",
          "[host][tune]") {
  const std::string text = R"({"name": "t", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "tune": {"budget": "20m", "objective": "step_time", "max_live": 4}})";
  SweepSpec s = parse_sweep(text, "t.json");
  REQUIRE(s.tune);
  CHECK(s.tune->budget_s == 1200);
  CHECK(s.tune->objective == Objective::step_time);
  CHECK(s.tune->objective_given);
  CHECK_FALSE(is_tune_run(s));
  // A plain run stores the file's object untouched: the budget as written.
  CHECK(s.to_json()["tune"] == Json::parse(R"({"budget": "20m", "objective": "step_time",
                                                "max_live": 4})"));
  // A race stores what defines it, every key, and no budget.
  s.tune->race = true;
  const Json stored = s.to_json();
  CHECK(stored["tune"] == Json::parse(R"({"objective": "step_time", "constraints": [],
    "alpha": 0.05, "confirm_repeats": 3, "max_live": 4, "seed": 0, "race": true})"));
  const SweepSpec back = parse_sweep(stored.dump(), "run 2");
  CHECK(is_tune_run(back));
  CHECK(back.to_json() == stored);
  CHECK_FALSE(parse_sweep(R"({"name": "p", "workload": "noop"})", "p.json").tune);
}

TEST_CASE("a tune key the file misspells is refused with the sweep", "[host][tune]") {
  CHECK_THROWS_WITH(
      parse_sweep(R"({"name": "t", "workload": "noop", "tune": {"budjet": 9}})", "t.json"),
      Contains("t.json: tune.budjet: unknown key"));
}

TEST_CASE("best and tune take one objective vocabulary, best's old spellings as aliases",
          "[host][tune]") {
  CHECK(parse_objective("memory") == Objective::peak_memory);
  CHECK(parse_objective("time") == Objective::step_time);
  CHECK_FALSE(parse_objective("speed"));
  // A tune file may use either spelling; the race records the canonical one.
  SweepSpec s = parse_sweep(R"({"name": "t", "workload": "noop", "grid": {"batch_size": [1, 2]},
    "tune": {"objective": "memory"}})",
                            "t.json");
  REQUIRE(s.tune);
  CHECK(s.tune->objective == Objective::peak_memory);
  s.tune->race = true;
  CHECK(s.to_json()["tune"]["objective"] == "peak_memory");
}
