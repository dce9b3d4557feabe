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

// Brings db to schema_version(), each migration in its own transaction.
// Refuses a database newer than this build and a file that is not a
// gpusweep database. Returns the number of migrations applied.
int migrate(Connection& db);

}  // namespace gpusweep::db
