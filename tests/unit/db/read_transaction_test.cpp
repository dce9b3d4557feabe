// A reader's several queries see one state of the database while a writer
// commits between them (serve's run details read through one).
#include <gpusweep/db/sqlite.hpp>

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::db;

namespace {
int64_t rows(Connection& c) {
  Statement s = c.prepare("SELECT count(*) FROM t");
  REQUIRE(s.step());
  return s.get_int(0);
}
}  // namespace

TEST_CASE("a read transaction's queries see the state of its first read", "[db]") {
  gpusweep::test::TempDir dir("gpusweep_read_tx");
  Connection writer(dir.file("r.db"), Connection::Mode::read_write);
  writer.exec("PRAGMA journal_mode=WAL; CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)");
  Connection reader(dir.file("r.db"), Connection::Mode::read_only);
  {
    ReadTransaction one_state(reader);
    CHECK(rows(reader) == 1);
    writer.exec("INSERT INTO t VALUES (2)");  // committed between two reads
    CHECK(rows(reader) == 1);
  }
  // Out of it, each read sees the newest commit.
  CHECK(rows(reader) == 2);
  writer.exec("INSERT INTO t VALUES (3)");
  CHECK(rows(reader) == 3);
}
