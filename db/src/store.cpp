// The results store; see store.hpp. This file opens a database (WAL, the
// schema's migrations, an upgraded copy of one an older gpusweep wrote); the
// store's writes are in store_write.cpp, its reads of runs and trials in
// store_read.cpp, of a trial's blocks and metrics in store_samples.cpp, and
// `gpusweep sql`'s read-only SQL in store_query.cpp.
#include <gpusweep/db/migrate.hpp>

#include <gpusweep/db/store.hpp>
#include "copy.hpp"

#include <atomic>
#include <chrono>
#include <thread>

namespace gpusweep::db {

namespace {
std::atomic<int64_t> upgraded_copies{0};
}  // namespace

int64_t Store::upgraded_copies_made() { return upgraded_copies.load(); }

Store::Store(const std::string& path, Connection::Mode mode) : db_(path, mode) {
  db_.exec("PRAGMA foreign_keys = ON");
  if (mode == Connection::Mode::read_write) {
    // Two hosts creating the same new database race to switch it to WAL and
    // to create the tables; SQLite answers some of those races with BUSY at
    // once, without waiting in the busy handler (to rule out deadlocks). The
    // loser retries: by then the winner has done the work, or soon will.
    for (int attempt = 0;; ++attempt) {
      try {
        db_.exec("PRAGMA journal_mode = WAL");
        db_.exec("PRAGMA synchronous = NORMAL");
        migrate(db_);
        break;
      } catch (const DbError& e) {
        const bool busy = (e.code() & 0xff) == SQLITE_BUSY || (e.code() & 0xff) == SQLITE_LOCKED;
        if (!busy || attempt >= 500) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } else {
    int have = current_version(db_);
    if (have > 0 && have < schema_version()) {
      // An older gpusweep wrote it: read an upgraded copy, leave the file be.
      copy_ = std::make_unique<TempFile>("gpusweep-read");
      migrated_copy(db_, copy_->path(), "database '" + path + "'");
      ++upgraded_copies;
      db_ = Connection(copy_->path(), Connection::Mode::read_only);
      db_.exec("PRAGMA foreign_keys = ON");
      have = current_version(db_);
    }
    require_readable(have, "database", path, "run a sweep into it first or pass the right --db",
                     "upgrade gpusweep to read it");
  }
}

Store::~Store() = default;

}  // namespace gpusweep::db
