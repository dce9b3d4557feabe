// Working copies of a database: a temporary file, and a consistent snapshot
// of another database brought to this build's schema in it. Merge reads
// shards through such a copy, and a read-only Store reads an older database
// through one, so that neither ever writes the file it was given.
#pragma once

#include <gpusweep/db/sqlite.hpp>

#include <string>

namespace gpusweep::db {

// A file in the temporary folder, removed (with SQLite's companions) when it
// goes out of scope.
class TempFile {
 public:
  explicit TempFile(const std::string& prefix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Copies a consistent snapshot of `src` (only committed transactions; waits
// out a writer's lock) into the database at `dest`, then migrates the copy.
// `what` names the source in errors ("shard 'x.db'").
void migrated_copy(Connection& src, const std::string& dest, const std::string& what);

}  // namespace gpusweep::db
