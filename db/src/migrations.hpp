// The schema's numbered migrations, embedded in the binary at build time.
#pragma once

#include <string>
#include <vector>

namespace gpusweep::db {

struct Migration {
  std::string file;  // "001_initial.sql": the number is the user_version it yields
  std::string sql;
};

const std::vector<Migration>& embedded_migrations();

}  // namespace gpusweep::db
