// A thin RAII layer over SQLite: connection, prepared statement, transaction.
// Errors throw gpusweep::db::DbError with SQLite's message and the SQL.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpusweep::db {

class DbError : public std::runtime_error {
 public:
  DbError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

class Statement;

class Connection {
 public:
  enum class Mode { read_write, read_only };

  Connection(const std::string& path, Mode mode);

  // Runs one or more statements without results.
  void exec(const std::string& sql);
  Statement prepare(const std::string& sql);
  int64_t last_insert_rowid() const;
  int changes() const;
  sqlite3* handle() const { return db_.get(); }
  const std::string& path() const { return path_; }
  Mode mode() const { return mode_; }

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  Mode mode_;
};

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);

  // Binding, 1-based like SQLite. Chainable.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind(int index, const char* value);
  Statement& bind_null(int index);
  // Binds bytes as a BLOB (copied).
  Statement& bind_blob(int index, const std::string& bytes);
  template <class T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Advances; true while a row is available.
  bool step();
  // Steps once, expecting no rows (INSERT/UPDATE/DELETE).
  void run();
  void reset();

  int columns() const;
  std::string column_name(int i) const;
  bool is_null(int i) const;
  int64_t get_int(int i) const;
  double get_double(int i) const;
  std::string get_text(int i) const;
  // A TEXT column's bytes without a copy (empty for NULL), valid until the
  // next step or reset.
  std::string_view get_text_view(int i) const;
  std::optional<double> get_optional_double(int i) const;
  std::optional<std::string> get_optional_text(int i) const;
  // A BLOB column's bytes (empty for NULL), valid until the next step or reset.
  std::string_view get_blob(int i) const;
  int column_type(int i) const;

 private:
  void check(int rc, const char* what) const;
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
  std::string sql_;
};

// BEGIN IMMEDIATE on construction; ROLLBACK in the destructor unless commit().
class Transaction {
 public:
  explicit Transaction(Connection& db);
  ~Transaction() noexcept;
  void commit();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  Connection& db_;
  bool done_ = false;
};

// A read transaction for a reader's several queries: BEGIN (deferred) on
// construction, so that the first read takes a snapshot every later read
// of the scope sees, whatever a writer commits meanwhile; ended on
// destruction. Keep it short: while it lasts, the writer's WAL cannot reset.
class ReadTransaction {
 public:
  explicit ReadTransaction(Connection& db);
  ~ReadTransaction() noexcept;
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Connection& db_;
};

}  // namespace gpusweep::db
