// The one number a `SELECT count(*) ...` answers, for the store's tests.
#pragma once

#include <gpusweep/db/sqlite.hpp>

#include <cstdint>
#include <string>

namespace gpusweep::test {

inline int64_t count(db::Connection& db, const std::string& sql) {
  auto st = db.prepare(sql);
  st.step();
  return st.get_int(0);
}

}  // namespace gpusweep::test
