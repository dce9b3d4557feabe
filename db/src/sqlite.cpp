// RAII SQLite wrapper; see sqlite.hpp.
#include <gpusweep/db/sqlite.hpp>

#include "aggregates.hpp"

namespace gpusweep::db {

namespace {
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& context) {
  const char* msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw DbError(context + ": " + (msg != nullptr ? msg : "unknown error"), rc);
}
}  // namespace

Connection::Connection(const std::string& path, Mode mode) : path_(path), mode_(mode) {
  sqlite3* raw = nullptr;
  const int flags = (mode == Mode::read_only ? SQLITE_OPEN_READONLY
                                             : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) fail(raw, rc, "cannot open database '" + path + "'");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 10000);
  detail::register_aggregates(raw);
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw DbError(msg, rc);
  }
}

Statement Connection::prepare(const std::string& sql) { return Statement(db_.get(), sql); }

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_.get()); }

int Connection::changes() const { return sqlite3_changes(db_.get()); }

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db), sql_(sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &raw, nullptr);
  stmt_.reset(raw);
  if (rc != SQLITE_OK) fail(db, rc, "cannot prepare SQL");
}

void Statement::check(int rc, const char* what) const {
  if (rc != SQLITE_OK) fail(db_, rc, what);
}

Statement& Statement::bind(int index, int64_t value) {
  check(sqlite3_bind_int64(stmt_.get(), index, value), "bind");
  return *this;
}
Statement& Statement::bind(int index, double value) {
  check(sqlite3_bind_double(stmt_.get(), index, value), "bind");
  return *this;
}
Statement& Statement::bind(int index, const std::string& value) {
  check(sqlite3_bind_text(stmt_.get(), index, value.data(), static_cast<int>(value.size()),
                          SQLITE_TRANSIENT),
        "bind");
  return *this;
}
Statement& Statement::bind_blob(int index, const std::string& bytes) {
  check(sqlite3_bind_blob(stmt_.get(), index, bytes.data(), static_cast<int>(bytes.size()),
                          SQLITE_TRANSIENT),
        "bind");
  return *this;
}
Statement& Statement::bind(int index, const char* value) {
  return value == nullptr ? bind_null(index) : bind(index, std::string(value));
}
Statement& Statement::bind_null(int index) {
  check(sqlite3_bind_null(stmt_.get(), index), "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, rc, "SQL failed");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_.get());
  sqlite3_clear_bindings(stmt_.get());
}

int Statement::columns() const { return sqlite3_column_count(stmt_.get()); }
std::string Statement::column_name(int i) const { return sqlite3_column_name(stmt_.get(), i); }
bool Statement::is_null(int i) const { return sqlite3_column_type(stmt_.get(), i) == SQLITE_NULL; }
int Statement::column_type(int i) const { return sqlite3_column_type(stmt_.get(), i); }
int64_t Statement::get_int(int i) const { return sqlite3_column_int64(stmt_.get(), i); }
double Statement::get_double(int i) const { return sqlite3_column_double(stmt_.get(), i); }
std::string Statement::get_text(int i) const {
  const auto* text = sqlite3_column_text(stmt_.get(), i);
  return text == nullptr ? std::string()
                         : std::string(reinterpret_cast<const char*>(text),
                                       static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i)));
}
std::string_view Statement::get_text_view(int i) const {
  const auto* text = sqlite3_column_text(stmt_.get(), i);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text),
          static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i))};
}
std::string_view Statement::get_blob(int i) const {
  const void* data = sqlite3_column_blob(stmt_.get(), i);
  if (data == nullptr) return {};
  return {static_cast<const char*>(data),
          static_cast<size_t>(sqlite3_column_bytes(stmt_.get(), i))};
}
std::optional<double> Statement::get_optional_double(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_double(i);
}
std::optional<std::string> Statement::get_optional_text(int i) const {
  if (is_null(i)) return std::nullopt;
  return get_text(i);
}

Transaction::Transaction(Connection& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

Transaction::~Transaction() noexcept {
  if (done_) return;
  try {
    db_.exec("ROLLBACK");
  } catch (...) {
    // Nothing to do: SQLite rolls back an unfinished transaction on close.
  }
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

ReadTransaction::ReadTransaction(Connection& db) : db_(db) { db_.exec("BEGIN DEFERRED"); }

ReadTransaction::~ReadTransaction() noexcept {
  try {
    db_.exec("COMMIT");
  } catch (...) {
    // Nothing to do: SQLite ends an unfinished transaction on close.
  }
}

}  // namespace gpusweep::db
