// median() and percentile(), the aggregates every connection has.
#include <gpusweep/db/sqlite.hpp>

#include <catch2/catch.hpp>

#include <cmath>

using namespace gpusweep::db;

namespace {

double one(Connection& c, const std::string& sql) {
  auto st = c.prepare(sql);
  REQUIRE(st.step());
  return st.is_null(0) ? NAN : st.get_double(0);
}

}  // namespace

TEST_CASE("median and percentile aggregate as numpy's default interpolation does", "[db]") {
  Connection c(":memory:", Connection::Mode::read_write);
  const std::string rows = " FROM (VALUES (10), (1), (3), (2), (NULL), ('x'))";
  CHECK(one(c, "SELECT median(column1)" + rows) == Approx(2.5));
  CHECK(one(c, "SELECT percentile(column1, 25)" + rows) == Approx(1.75));
  CHECK(one(c, "SELECT percentile(column1, 100)" + rows) == Approx(10));
  CHECK(std::isnan(one(c, "SELECT median(column1) FROM (VALUES (NULL))")));
  // By group, each its own values.
  auto st = c.prepare(
      "SELECT column1, median(column2) FROM (VALUES (1, 1.0), (1, 3.0), (2, 5.0)) GROUP BY "
      "column1 ORDER BY column1");
  REQUIRE(st.step());
  CHECK(st.get_double(1) == Approx(2.0));
  REQUIRE(st.step());
  CHECK(st.get_double(1) == Approx(5.0));
  std::string error;
  try {
    c.prepare("SELECT percentile(column1, 101)" + rows).step();
  } catch (const DbError& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains("P must be one number from 0 to 100"));
}
