// `gpusweep diagnose --db FILE --trial ID`: a recorded trial re-diagnosed on
// another machine, from the first H100 run's records (a SQL fixture).
#include "harness.hpp"

#include <gpusweep/db/sqlite.hpp>

#include <fstream>
#include <sstream>

using Catch::Matchers::Contains;
using gpusweep::test::Sandbox;

namespace {

void load_h100_records(const Sandbox& box) {
  std::ifstream in(std::string(GPUSWEEP_SOURCE_DIR) + "/tests/fixtures/records/h100_diag.sql");
  REQUIRE(in);
  std::stringstream sql;
  sql << in.rdbuf();
  gpusweep::db::Connection(box.path("diag.db"), gpusweep::db::Connection::Mode::read_write)
      .exec(sql.str());
}

}  // namespace

TEST_CASE("diagnose --trial re-diagnoses the H100's dqn as launch-bound, restoration input-bound",
          "[integration]") {
  Sandbox box;
  load_h100_records(box);
  const auto dqn = box.gpusweep("diagnose --db diag.db --trial 1");
  INFO(dqn.output);
  REQUIRE(dqn.code == 0);
  CHECK_THAT(dqn.output, Contains("bottleneck: launch/overhead-bound"));
  CHECK_THAT(dqn.output, Contains("host-bound"));
  CHECK_THAT(dqn.output, Contains("CUDA graphs"));
  CHECK_THAT(dqn.output, Contains("device busy: 6.0%"));
  CHECK_THAT(dqn.output, !Contains("compute-bound"));
  CHECK_THAT(dqn.output, !Contains("reports no FLOPs"));

  const auto doc =
      gpusweep::test::gpusweep_json(box, "diagnose --db diag.db --trial 2 --format json");
  CHECK(doc.at("bottleneck") == "input-bound");
  CHECK(doc.at("phases_approximate") == true);

  // The peak given by hand lands in the FLOP/s comparison.
  const auto peak = gpusweep::test::gpusweep_json(
      box, "diagnose --db diag.db --trial 1 --peak 51400 --format json");
  CHECK(peak.at("peak_flops").get<double>() == Approx(51.4e12));
}

TEST_CASE("diagnose --trial refuses a workload argument and a missing trial, naming the fix",
          "[integration]") {
  Sandbox box;
  load_h100_records(box);
  const auto both = box.gpusweep("diagnose dqn --db diag.db --trial 1");
  CHECK(both.code != 0);
  CHECK_THAT(both.output, Contains("drop the workload argument"));
  const auto missing = box.gpusweep("diagnose --db diag.db --trial 42");
  CHECK(missing.code != 0);
  CHECK_THAT(missing.output, Contains("--trial 42: no such trial"));
  const auto neither = box.gpusweep("diagnose --db diag.db");
  CHECK(neither.code != 0);
  CHECK_THAT(neither.output, Contains("give a WORKLOAD"));
}
