// A check's stored record: read back as it was written, and refused with
// the key named when it is not one gpusweep wrote.
#include "spec/check_spec.hpp"
#include "spec/sweep.hpp"
#include "support/error.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep;
using namespace gpusweep::host;
using Catch::Matchers::Contains;

namespace {

std::string refusal(const Json& check) {
  try {
    parse_check("run 4", check);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a check's record reads back as written, keys given only", "[host][check]") {
  // gpusweep check's record, and history --confirm's (a tolerance only).
  const Json full = Json::parse(R"({
    "base": {"abi": "1.1", "hash": "9651c4aeb6d50796", "label": "v1", "path": "/b/base.so",
             "version": "1.0.0"},
    "head": {"abi": "1.1", "hash": "8333e8961a1f0000", "label": "v2", "path": "model.py",
             "plugin": "/b/gpusweep_python.so", "version": "1.0.0"},
    "budget_s": 60.0, "judged_rounds": 3, "max_quality_loss": 0.01,
    "memory_tolerance": 0.1, "quality_guard": "non-inferiority", "tolerance": 0.03})");
  const Json confirm = Json::parse(R"({"confirm": true, "tolerance": 0.05,
    "base": {"abi": "1.1", "hash": "a", "label": "", "path": "p", "version": "1"},
    "head": {"abi": "1.1", "hash": "b", "label": "", "path": "p", "version": "2"}})");
  for (const Json& j : {full, confirm}) CHECK(parse_check("run 1", j).to_json() == j);

  const CheckSpec c = parse_check("run 1", full);
  CHECK(c.head.plugin == "/b/gpusweep_python.so");
  CHECK(c.build(kHeadBuild).label == "v2");
  CHECK(*c.judged_rounds == 3);
  CHECK_FALSE(parse_check("run 1", confirm).memory_tolerance);
  CHECK(parse_check("run 1", confirm).confirm);

  // A resume finds its run again by the tolerances and the builds' hashes:
  // a new label, path, budget or first judgement leaves it the same run.
  CheckSpec later = c;
  later.base.label = "3f2a9c1b7d00";
  later.head.path = "elsewhere/model.py";
  later.budget_s = 600;
  later.judged_rounds.reset();
  CHECK(later.identity() == c.identity());
  later.tolerance = 0.05;
  CHECK(later.identity() != c.identity());
  CheckSpec rebuilt = c;
  rebuilt.head.hash = "0000000000000000";
  CHECK(rebuilt.identity() != c.identity());
}

TEST_CASE("a check's record with a key gpusweep does not write is refused by name",
          "[host][check]") {
  CHECK_THAT(refusal(Json{{"tolerence", 0.03}}),
             Contains("run 4: check.tolerence: unknown key") && Contains("'tolerance'"));
  CHECK_THAT(refusal(Json{{"tolerance", "3%"}}), Contains("check.tolerance"));
  CHECK_THAT(refusal(Json{{"head", {{"hash", 7}}}}), Contains("check.head.hash"));
  CHECK_THAT(refusal(Json{{"base", {{"commit", "x"}}}}), Contains("check.base.commit"));
  CHECK_THAT(refusal(Json::array()), Contains("check: expected an object"));
  CHECK_THROWS_AS(CheckSpec{}.build("middle"), UsageError);
}

TEST_CASE("a stored check's sweep keeps its record through the spec", "[host][check]") {
  SweepSpec s =
      parse_sweep(R"({"name": "c", "workload": "noop", "grid": {"batch_size": [1]}})", "c.json");
  CheckSpec check;
  check.tolerance = 0.02;
  check.base.hash = "aa";
  check.head.hash = "bb";
  make_check(s, check, 90);
  const SweepSpec back = parse_sweep(s.to_json().dump(), "run 1");
  REQUIRE(back.check);
  CHECK(back.check->budget_s == 90);
  CHECK(back.check->to_json() == s.check->to_json());
  CHECK(back.grid[kBuildKey] == Json::array({kBaseBuild, kHeadBuild}));
}
