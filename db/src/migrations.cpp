// Migration runner; see migrate.hpp.
#include <gpusweep/db/migrate.hpp>

#include "migrations.hpp"
#include "series.hpp"

#include <cstdlib>

namespace gpusweep::db {

namespace {
int number_of(const Migration& m) { return std::atoi(m.file.c_str()); }
}  // namespace

int schema_version() {
  int v = 0;
  for (const auto& m : embedded_migrations()) v = std::max(v, number_of(m));
  return v;
}

void require_readable(int version, const std::string& kind, const std::string& path,
                      const std::string& fix_not_ours, const std::string& fix_newer) {
  if (version == 0) {
    throw DbError("'" + path + "' is not a gpusweep database (no schema version); " + fix_not_ours,
                  SQLITE_NOTADB);
  }
  if (version > schema_version()) {
    throw DbError(kind + " '" + path + "' has schema version " + std::to_string(version) +
                      ", newer than this gpusweep understands (" +
                      std::to_string(schema_version()) + "); " + fix_newer,
                  SQLITE_NOTADB);
  }
}

int current_version(Connection& db) {
  auto st = db.prepare("PRAGMA user_version");
  st.step();
  return static_cast<int>(st.get_int(0));
}

int migrate(Connection& db) {
  if (current_version(db) == schema_version()) return 0;
  // Under the write lock, re-read: two hosts opening a new database at once
  // both see version 0, and only the first may create the tables.
  Transaction tx(db);
  const int have = current_version(db);
  if (have > schema_version()) {
    throw DbError("database '" + db.path() + "' has schema version " + std::to_string(have) +
                      ", newer than this gpusweep understands (" +
                      std::to_string(schema_version()) + "); upgrade gpusweep to read it",
                  SQLITE_NOTADB);
  }
  if (have == 0) {
    // A file with tables but no user_version is someone else's database.
    auto st = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'");
    st.step();
    if (st.get_int(0) > 0) {
      throw DbError("'" + db.path() + "' is an SQLite database but not a gpusweep one " +
                        "(it has tables and no gpusweep schema version); use another --db file",
                    SQLITE_NOTADB);
    }
  }
  // Every pending migration in the one transaction: all or none of them.
  int applied = 0;
  for (const auto& m : embedded_migrations()) {
    const int n = number_of(m);
    if (n <= have) continue;
    db.exec(m.sql);
    // A migration whose data step SQL cannot express (packing blobs).
    if (n == 6) backfill_series(db);
    db.exec("PRAGMA user_version = " + std::to_string(n));
    ++applied;
  }
  tx.commit();
  return applied;
}

}  // namespace gpusweep::db
