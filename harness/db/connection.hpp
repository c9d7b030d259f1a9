#pragma once

// The store's view of a database: a connection that runs SQL, prepared statements with positional `?`
// parameters, and a transaction that rolls back unless committed. Narrow on purpose: SQLite is the one
// implementation (sqlite_connection.cpp), PostgreSQL (postgresql_connection.cpp, on libpq) the other; the
// latter rewrites `?` as `$n`, and the store's code and schema are the same for both. What SQL text differs
// between the two lives in dialect.hpp, nowhere else.
//
// Every failure throws DbError naming the database and the statement. Nulls: a bound std::nullopt, and
// NaN (which neither backend keeps as a number) is stored as NULL and read back as NaN.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "harness/core/error.hpp"
#include "harness/db/dialect.hpp"

namespace memstress::db {

// A database that cannot be opened, read or written (exit 2: the --db input is at fault, or the
// disk). The message names the database.
class DbError : public InputError {
 public:
  using InputError::InputError;
};

class Statement {
 public:
  virtual ~Statement() = default;
  Statement() = default;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement(Statement&&) = delete;
  Statement& operator=(Statement&&) = delete;

  // Parameters are numbered from 1, as in SQL.
  virtual Statement& bind(int index, std::int64_t value) = 0;
  virtual Statement& bind(int index, double value) = 0;  // NaN: NULL
  virtual Statement& bind(int index, std::string_view value) = 0;
  virtual Statement& bind_null(int index) = 0;
  // The same as bind(index, value) where `value` stays alive and unchanged until the statement is reset (the
  // backend may keep the view rather than a copy: Note [Many rows a statement]).
  virtual Statement& bind_view(int index, std::string_view value) { return bind(index, value); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, std::optional<int> value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Runs the statement to its next row: true with a row to read, false when done.
  virtual bool step() = 0;
  // Runs a statement that returns no rows (or ignores them) and resets it for the next binding.
  void run() {
    while (step()) {
    }
    reset();
  }
  virtual void reset() = 0;  // to run again; bindings are cleared

  // Columns of the current row, numbered from 0. NULL: 0, NaN, "" and is_null() true.
  [[nodiscard]] virtual bool is_null(int column) const = 0;
  [[nodiscard]] virtual std::int64_t integer(int column) const = 0;
  [[nodiscard]] virtual double real(int column) const = 0;
  [[nodiscard]] virtual std::string text(int column) const = 0;
  // The same without a copy: valid until the next step() or reset().
  [[nodiscard]] virtual std::string_view text_view(int column) const = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;
  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&&) = delete;
  Connection& operator=(Connection&&) = delete;

  [[nodiscard]] virtual const Dialect& dialect() const noexcept = 0;
  [[nodiscard]] virtual const std::string& name() const noexcept = 0;  // as messages name it
  // Opened for queries (OpenMode::read_only): nothing can be written through it.
  [[nodiscard]] virtual bool read_only() const noexcept = 0;
  // Runs one or more statements without parameters (schema, BEGIN/COMMIT).
  virtual void exec(std::string_view sql) = 0;
  [[nodiscard]] virtual std::unique_ptr<Statement> prepare(std::string_view sql) = 0;
};

// A writing transaction: the dialect's begin_write on construction (SQLite: BEGIN IMMEDIATE, the write lock
// taken at once), ROLLBACK in the destructor unless commit() ran (an exception on the way out undoes
// everything the transaction wrote). Not nested. Queries read outside any.
class Transaction {
 public:
  explicit Transaction(Connection& connection);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  Transaction(Transaction&&) = delete;
  Transaction& operator=(Transaction&&) = delete;

  void commit();

 private:
  Connection* connection_;
  bool done_ = false;
};

// How a store (`--db`) is opened. `create` (ingest): read-write, a missing SQLite file is created.
// `read_only` (outliers, history, compare, export): the store must exist, and nothing is written to it or
// beside it. Either way an SQLite path must name a regular file (or, to create, nothing yet): a directory, a
// device
// (/dev/null), a FIFO is refused with InputError.
//
// Note [Reading a store]
// ~~~~~~~~~~~~~~~~~~~~~~
// A query never creates the file, never turns an empty file into a store (the schema is checked, not
// migrated: Store), never writes (PRAGMA query_only). A store in WAL mode (every store ingest made) has
// readers share a lock file beside it (its -shm) and a -wal, which SQLite makes where the directory can be
// written; a connection that could write removes them as the last to close, so a store that can be written
// is read through one (query_only: it cannot write all the same), and a query leaves no -shm or -wal behind.
// A store that cannot be written is opened SQLITE_OPEN_READONLY; where the directory cannot (a read-only
// file system, a read-only snapshot of
// the store) the store is opened immutable (SQLite's `immutable=1`): read without locks, as the files are.
// Nothing can write there, so nothing changes under the reader; a -wal left by a writer that crashed is not
// read there (the commits in it are missing until an ingest where the directory is writable replays it).
// PostgreSQL's read-only sessions (default_transaction_read_only) refuse any write the same way.
enum class OpenMode { create, read_only };

// Opens `url` (`memstress db --db`): a path of an SQLite file, or a `postgresql://` (or `postgres://`) URL of
// a PostgreSQL database (postgresql.hpp: libpq's connection URI; the database must exist, its tables are made
// by the store's migrations like SQLite's). Its errors name `what` (the command's flag) and the url (masked).
std::unique_ptr<Connection> open_database(const std::string& url, OpenMode mode, std::string_view what);

}  // namespace memstress::db
