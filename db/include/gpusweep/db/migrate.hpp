// Applies numbered migrations by PRAGMA user_version.
#pragma once

#include <gpusweep/db/sqlite.hpp>

#include <string>
#include <vector>

namespace gpusweep::db {

// The schema version this build writes (the highest embedded migration).
int schema_version();

// The version the database is at (0 for a new, empty file).
int current_version(Connection& db);

// Refuses a file this build cannot read, as a usage error (SQLITE_NOTADB,
// exit 2) with the fix: version 0 (not a gpusweep database; fix_not_ours
// says what to pass instead) or a version newer than schema_version() (fix_newer).
// kind names the file in the second message ("database", "shard").
void require_readable(int version, const std::string& kind, const std::string& path,
                      const std::string& fix_not_ours, const std::string& fix_newer);

// Brings db to schema_version(), each migration in its own transaction.
// Refuses a database newer than this build and a file that is not a
// gpusweep database. Returns the number of migrations applied.
int migrate(Connection& db);

}  // namespace gpusweep::db
