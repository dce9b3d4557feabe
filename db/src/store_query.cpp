// The results store's read-only SQL (Store::read_query, `gpusweep
// sql`): one statement, refused before it runs if it would write.
#include <gpusweep/db/store.hpp>

namespace gpusweep::db {

Store::QueryResult Store::read_query(const std::string& sql) {
  db_.exec("PRAGMA query_only = ON");
  {
    // Refuse writes before running anything, with a message that says why.
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    if (sqlite3_prepare_v2(db_.handle(), sql.c_str(), -1, &raw, &tail) != SQLITE_OK) {
      const std::string msg = sqlite3_errmsg(db_.handle());
      sqlite3_finalize(raw);
      throw DbError(msg, SQLITE_ERROR);
    }
    const bool readonly = raw == nullptr || sqlite3_stmt_readonly(raw) != 0;
    sqlite3_finalize(raw);
    if (!readonly) {
      throw DbError(
          "the database is opened read-only; this statement would write (use the "
          "sqlite3 shell on a copy if you really mean to change it)",
          SQLITE_READONLY);
    }
    if (tail != nullptr && std::string(tail).find_first_not_of(" \t\r\n;") != std::string::npos) {
      throw DbError("give one statement at a time", SQLITE_MISUSE);
    }
  }
  QueryResult r;
  Statement st = db_.prepare(sql);
  for (int i = 0; i < st.columns(); ++i) r.columns.push_back(st.column_name(i));
  while (st.step()) {
    nlohmann::json row = nlohmann::json::object();
    for (int i = 0; i < st.columns(); ++i) {
      const std::string& name = r.columns[static_cast<size_t>(i)];
      switch (st.column_type(i)) {
        case SQLITE_INTEGER:
          row[name] = st.get_int(i);
          break;
        case SQLITE_FLOAT:
          row[name] = st.get_double(i);
          break;
        case SQLITE_NULL:
          row[name] = nullptr;
          break;
        default:
          row[name] = st.get_text(i);
      }
    }
    r.rows.push_back(std::move(row));
  }
  return r;
}

}  // namespace gpusweep::db
