// Working copies of a database; see copy.hpp.
#include "copy.hpp"

#include <gpusweep/db/migrate.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace gpusweep::db {

namespace fs = std::filesystem;

TempFile::TempFile(const std::string& prefix) {
  std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw DbError("cannot create a temporary file in " + tmpl, SQLITE_CANTOPEN);
  ::close(fd);
  path_ = tmpl;
}

TempFile::~TempFile() {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix, ec);
}

void migrated_copy(Connection& src, const std::string& dest, const std::string& what) {
  Connection dst(dest, Connection::Mode::read_write);
  for (int attempt = 0;; ++attempt) {
    sqlite3_backup* b = sqlite3_backup_init(dst.handle(), "main", src.handle(), "main");
    if (b == nullptr) {
      throw DbError("cannot copy " + what + ": " + sqlite3_errmsg(dst.handle()),
                    sqlite3_extended_errcode(dst.handle()));
    }
    const int rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (rc == SQLITE_DONE) break;
    const bool busy = rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
    if (!busy || attempt >= 250)
      throw DbError("cannot copy " + what + ": " + sqlite3_errstr(rc), rc);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  migrate(dst);
}

}  // namespace gpusweep::db
