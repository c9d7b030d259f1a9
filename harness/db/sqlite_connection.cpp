// The SQLite backend of connection.hpp: sqlite3 and sqlite3_stmt handles owned by unique_ptr with their
// closing functions, every result code checked and turned into a DbError naming the database.

#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>

#include "harness/core/input_file.hpp"
#include "harness/db/connection.hpp"
#include "harness/db/postgresql.hpp"

namespace memstress::db {
namespace {

// How long a statement waits for another process's transaction on the same store before it fails.
constexpr int kBusyTimeoutMs = 10'000;

struct CloseDatabase {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct FinalizeStatement {
  void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using DatabaseHandle = std::unique_ptr<sqlite3, CloseDatabase>;
using StatementHandle = std::unique_ptr<sqlite3_stmt, FinalizeStatement>;

class SqliteStatement final : public Statement {
 public:
  SqliteStatement(StatementHandle handle, sqlite3* db, const std::string& name)
      : handle_(std::move(handle)), db_(db), name_(&name) {}

  Statement& bind(int index, std::int64_t value) override {
    check(sqlite3_bind_int64(handle_.get(), index, value), "bind");
    return *this;
  }
  Statement& bind(int index, double value) override {
    if (std::isnan(value)) {
      return bind_null(index);
    }
    check(sqlite3_bind_double(handle_.get(), index, value), "bind");
    return *this;
  }
  Statement& bind(int index, std::string_view value) override {
    check(
        sqlite3_bind_text64(handle_.get(), index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
        "bind");
    return *this;
  }
  Statement& bind_view(int index, std::string_view value) override {
    check(sqlite3_bind_text64(handle_.get(), index, value.data(), value.size(), SQLITE_STATIC, SQLITE_UTF8),
          "bind");
    return *this;
  }
  Statement& bind_null(int index) override {
    check(sqlite3_bind_null(handle_.get(), index), "bind");
    return *this;
  }

  bool step() override {
    const int rc = sqlite3_step(handle_.get());
    if (rc == SQLITE_ROW) {
      return true;
    }
    if (rc == SQLITE_DONE) {
      return false;
    }
    const std::string message = sqlite3_errmsg(db_);
    sqlite3_reset(handle_.get());
    throw DbError(fmt::format("database '{}': {} (in: {})", *name_, message, sql()));
  }
  void reset() override {
    sqlite3_reset(handle_.get());
    sqlite3_clear_bindings(handle_.get());
  }

  [[nodiscard]] bool is_null(int column) const override {
    return sqlite3_column_type(handle_.get(), column) == SQLITE_NULL;
  }
  [[nodiscard]] std::int64_t integer(int column) const override {
    return sqlite3_column_int64(handle_.get(), column);
  }
  [[nodiscard]] double real(int column) const override {
    return is_null(column) ? std::numeric_limits<double>::quiet_NaN()
                           : sqlite3_column_double(handle_.get(), column);
  }
  [[nodiscard]] std::string_view text_view(int column) const override {
    const unsigned char* text = sqlite3_column_text(handle_.get(), column);
    const int bytes = sqlite3_column_bytes(handle_.get(), column);
    return text == nullptr
               ? std::string_view()
               : std::string_view(reinterpret_cast<const char*>(text), static_cast<std::size_t>(bytes));
  }
  [[nodiscard]] std::string text(int column) const override { return std::string(text_view(column)); }

 private:
  [[nodiscard]] std::string sql() const {
    const char* text = sqlite3_sql(handle_.get());
    return text == nullptr ? std::string() : std::string(text);
  }
  void check(int rc, const char* what) const {
    if (rc != SQLITE_OK) {
      throw DbError(fmt::format("database '{}': {}: {} (in: {})", *name_, what, sqlite3_errmsg(db_), sql()));
    }
  }

  StatementHandle handle_;
  sqlite3* db_;
  const std::string* name_;  // the connection's, which outlives its statements
};

class SqliteConnection final : public Connection {
 public:
  SqliteConnection(DatabaseHandle db, std::string name, bool read_only)
      : db_(std::move(db)), name_(std::move(name)), read_only_(read_only) {}

  [[nodiscard]] const Dialect& dialect() const noexcept override { return kSqlite; }
  [[nodiscard]] const std::string& name() const noexcept override { return name_; }
  [[nodiscard]] bool read_only() const noexcept override { return read_only_; }

  void exec(std::string_view sql) override {
    const std::string text(sql);
    char* error = nullptr;
    if (sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string message = error != nullptr ? error : sqlite3_errmsg(db_.get());
      sqlite3_free(error);
      throw DbError(fmt::format("database '{}': {} (in: {})", name_, message, first_line(sql)));
    }
  }

  // exec(sql), tried again while SQLite refuses it as busy at once (without its busy handler, as a change of
  // journal mode can be) until `wait` has passed.
  void exec_when_not_busy(std::string_view sql, std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    const std::string text(sql);
    int rc = SQLITE_OK;
    while (((rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr)) & 0xff) == SQLITE_BUSY &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (rc != SQLITE_OK) {
      exec(sql);  // once more, to fail as every statement does
    }
  }

  std::unique_ptr<Statement> prepare(std::string_view sql) override {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr) != SQLITE_OK) {
      throw DbError(
          fmt::format("database '{}': {} (in: {})", name_, sqlite3_errmsg(db_.get()), first_line(sql)));
    }
    return std::make_unique<SqliteStatement>(StatementHandle(raw), db_.get(), name_);
  }

 private:
  static std::string_view first_line(std::string_view sql) { return sql.substr(0, sql.find('\n')); }

  DatabaseHandle db_;
  std::string name_;
  bool read_only_;
};

}  // namespace

Transaction::Transaction(Connection& connection) : connection_(&connection) {
  connection_->exec(connection_->dialect().begin_write);
}

Transaction::~Transaction() {
  if (!done_) {
    try {
      connection_->exec("ROLLBACK");
    } catch (const Error&) {  // NOLINT(bugprone-empty-catch): a failed rollback leaves nothing to undo
    }
  }
}

void Transaction::commit() {
  connection_->exec("COMMIT");
  done_ = true;
}

namespace {

// `path` as an SQLite URI filename (https://sqlite.org/uri.html): absolute, with the characters a URI gives
// a meaning to percent-encoded.
std::string sqlite_uri(const std::filesystem::path& path, std::string_view query) {
  std::string uri = "file:";
  for (const char c : std::filesystem::absolute(path).lexically_normal().string()) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '%' || c == '?' || c == '#' || byte < 0x21 || byte >= 0x7F) {
      uri += fmt::format("%{:02X}", byte);
    } else {
      uri += c;
    }
  }
  return uri + "?" + std::string(query);
}

// Refuses a store's path (read from `what`) that names anything but a regular file (or, for `create`, nothing
// yet): /dev/null opened as a store made /dev/null-journal beside it.
void check_store_path(const std::string& path, OpenMode mode, std::string_view what) {
  std::error_code ec;
  const std::filesystem::file_status target = std::filesystem::status(path, ec);  // links followed
  if (target.type() == std::filesystem::file_type::not_found) {
    if (mode == OpenMode::read_only) {
      throw InputError(
          fmt::format("{} '{}': no such database (memstress db ingest creates one)", what, path));
    }
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, ec))) {
      throw InputError(
          fmt::format("{} '{}': a symbolic link to nothing; name the database file", what, path));
    }
    return;
  }
  if (ec) {
    throw InputError(fmt::format("{} '{}': cannot be read: {}", what, path, ec.message()));
  }
  if (target.type() != std::filesystem::file_type::regular) {
    throw InputError(
        fmt::format("{} '{}': {}, not a database file", what, path, file_type_name(target.type())));
  }
}

}  // namespace

std::unique_ptr<Connection> open_database(const std::string& url, OpenMode mode, std::string_view what) {
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    return open_postgresql(url, mode,
                           what);  // the server holds the database: it must exist, whatever the mode
  }
  const bool in_memory = url == ":memory:";
  if (!in_memory || mode == OpenMode::read_only) {
    check_store_path(url, mode, what);
  }
  // NOMUTEX: a connection is used by one thread (Note [Ingesting many files]), so SQLite need not lock
  // around each call (it did, on every column of every row: a tenth of a fleet query's time).
  int flags = SQLITE_OPEN_NOMUTEX;
  std::string filename = url;
  const std::filesystem::path dir = std::filesystem::absolute(url).parent_path();
  const bool dir_writable = in_memory || ::access(dir.c_str(), W_OK) == 0;
  const int dir_errno = errno;
  const bool exists = !in_memory && std::filesystem::exists(url);
  const bool file_writable = in_memory || (exists && ::access(url.c_str(), W_OK) == 0);
  const int file_errno = errno;
  if (mode == OpenMode::create && (!dir_writable || (exists && !file_writable))) {
    // SQLite would open it read-only and fail on the first write as "not a database".
    const std::string why =
        std::error_code(!dir_writable ? dir_errno : file_errno, std::generic_category()).message();
    throw InputError(
        fmt::format("{} '{}': {} cannot be written ({}): an ingest writes the store", what, url,
                    !dir_writable ? fmt::format("its directory {}", dir.string()) : std::string("it"), why));
  }
  bool query_only = false;
  if (mode == OpenMode::create) {
    flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  } else if (dir_writable && file_writable && !in_memory) {
    // Note [Reading a store]: a store that can be written is read through a connection that may not write
    // (query_only), so that as the last to close it removes the WAL files it shares with other readers.
    flags |= SQLITE_OPEN_READWRITE;
    query_only = true;
  } else {
    // Note [Reading a store]: read-only, so that a query never creates, converts or journals anything; where
    // the directory cannot be written (a read-only file system), immutable, since SQLite could not make the
    // lock file a WAL store's readers share (its -shm) there.
    flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    filename = sqlite_uri(url, dir_writable ? "mode=ro" : "mode=ro&immutable=1");
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(filename.c_str(), &raw, flags, nullptr);
  DatabaseHandle db(raw);  // owned even when the open failed (sqlite3_open_v2 may still allocate it)
  if (rc != SQLITE_OK) {
    throw InputError(fmt::format("{} '{}': cannot open: {}", what, url,
                                 db ? sqlite3_errmsg(db.get()) : sqlite3_errstr(rc)));
  }
  sqlite3_extended_result_codes(db.get(), 1);
  // Another process ingesting at the same time: wait for its transaction rather than fail at once.
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  auto connection = std::make_unique<SqliteConnection>(std::move(db), url, mode == OpenMode::read_only);
  // Not SQL the other backend needs: PostgreSQL always enforces foreign keys.
  connection->exec("PRAGMA foreign_keys = ON");
  if (query_only) {
    connection->exec("PRAGMA query_only = ON");
  }
  // A file that is not SQLite fails here, on its first read, rather than midway through an ingest.
  try {
    connection->exec("SELECT count(*) FROM sqlite_master");
  } catch (const DbError& e) {
    throw InputError(fmt::format("{} '{}': not an SQLite database ({})", what, url, e.what()));
  }
  // Write-ahead logging: a committed file costs no fsync (synchronous NORMAL syncs at checkpoints), so an
  // ingest of thousands of files is not thousands of disk flushes, and readers do not block the writer.
  // A crash may lose the last files committed, never corrupt the store; an ingest run again restores them
  // (idempotent). WAL needs a local file system (not NFS): a store shared over the network is PostgreSQL's
  // job. Set where the store is written (ingest); a store made so stays so, and queries only read it.
  // The change of journal mode can be refused at once while another process opens the same new store: tried
  // again for as long as the busy timeout.
  if (mode == OpenMode::create) {
    connection->exec_when_not_busy("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL",
                                   std::chrono::milliseconds(kBusyTimeoutMs));
  }
  // A page cache of up to 64 MiB (SQLite's default is 2 MiB): an ingest's batch updates index pages all over
  // a fleet's store (a GPU's series, its newest rows), and a cache too small for them read and wrote each
  // page again at every batch. A bound, whatever the number of files; used only as pages are read.
  connection->exec("PRAGMA cache_size = -65536");
  return connection;
}

}  // namespace memstress::db
