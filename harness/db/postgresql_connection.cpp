// The PostgreSQL backend of connection.hpp, on libpq (PostgreSQL's own client library): a PGconn and each
// PGresult owned by unique_ptr with their closing functions, every status checked and turned into a
// DbError naming the database (the URL with its password masked).
//
// Parameters travel as text and PostgreSQL infers their types from where they stand (a column, a
// comparison), so the store's SQL is the same for both backends: `?` is rewritten as `$1`, `$2`, ...
// outside quoted text. A statement runs when first stepped and its rows are read from the result; reset()
// drops the result and the bindings. A statement run a second time is prepared on the server (PQprepare) and
// run by name from then on: the server parsed and planned each run of the ingest's statements of many rows
// again, most of its time (Note [Many rows a statement]); one run once costs no extra round trip. Notices
// ("relation exists, skipping") are not printed.

#include <fmt/format.h>
#include <libpq-fe.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

#include "harness/db/connection.hpp"
#include "harness/db/postgresql.hpp"

namespace memstress::db {
namespace {

struct Finish {
  void operator()(PGconn* c) const noexcept { PQfinish(c); }
};
struct Clear {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using ConnectionHandle = std::unique_ptr<PGconn, Finish>;
using ResultHandle = std::unique_ptr<PGresult, Clear>;

std::string_view first_line(std::string_view sql) {
  const std::size_t start = sql.find_first_not_of(" \n");
  sql = start == std::string_view::npos ? std::string_view() : sql.substr(start);
  return sql.substr(0, sql.find('\n'));
}

// The server's message without its trailing newline.
std::string message(PGconn* c) {
  std::string text = PQerrorMessage(c);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  return text;
}

// Runs a PGresult status check: commands and queries succeed, anything else is the database's error.
ResultHandle checked(PGconn* c, PGresult* raw, const std::string& name, std::string_view sql) {
  ResultHandle result(raw);
  const ExecStatusType status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    std::string why = result ? PQresultErrorMessage(result.get()) : message(c);
    while (!why.empty() && why.back() == '\n') {
      why.pop_back();
    }
    throw DbError(
        fmt::format("database '{}': {} (in: {})", name, why.empty() ? message(c) : why, first_line(sql)));
  }
  return result;
}

class PostgresqlStatement final : public Statement {
 public:
  PostgresqlStatement(PGconn* c, const std::string& name, std::string sql, int parameters,
                      std::uint64_t& prepared)
      : c_(c),
        name_(&name),
        sql_(std::move(sql)),
        params_(static_cast<std::size_t>(parameters)),
        prepared_count_(&prepared) {}
  ~PostgresqlStatement() override {
    if (!server_name_.empty()) {  // a failed transaction refuses it: the name is never used again
      PQclear(PQexec(c_, ("DEALLOCATE " + server_name_).c_str()));
    }
  }
  PostgresqlStatement(const PostgresqlStatement&) = delete;
  PostgresqlStatement& operator=(const PostgresqlStatement&) = delete;
  PostgresqlStatement(PostgresqlStatement&&) = delete;
  PostgresqlStatement& operator=(PostgresqlStatement&&) = delete;

  Statement& bind(int index, std::int64_t value) override { return set(index, std::to_string(value)); }
  Statement& bind(int index, double value) override {
    if (std::isnan(value)) {
      return bind_null(index);
    }
    return set(index, std::isinf(value) ? (value > 0 ? "Infinity" : "-Infinity") : fmt::format("{}", value));
  }
  Statement& bind(int index, std::string_view value) override { return set(index, std::string(value)); }
  Statement& bind_null(int index) override { return set(index, std::nullopt); }

  bool step() override {
    if (!result_) {
      std::vector<const char*> values;
      values.reserve(params_.size());
      for (const std::optional<std::string>& p : params_) {
        values.push_back(p ? p->c_str() : nullptr);
      }
      const int n = static_cast<int>(values.size());
      if (server_name_.empty() && runs_ > 0) {
        std::string name = fmt::format("memstress_{}", ++*prepared_count_);
        checked(c_, PQprepare(c_, name.c_str(), sql_.c_str(), n, nullptr), *name_, sql_);
        server_name_ = std::move(name);
      }
      result_ = checked(c_,
                        server_name_.empty()
                            ? PQexecParams(c_, sql_.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0)
                            : PQexecPrepared(c_, server_name_.c_str(), n, values.data(), nullptr, nullptr, 0),
                        *name_, sql_);
      ++runs_;
      row_ = -1;
    }
    ++row_;
    return row_ < PQntuples(result_.get());
  }
  void reset() override {
    result_.reset();
    for (std::optional<std::string>& p : params_) {
      p.reset();
    }
  }

  [[nodiscard]] bool is_null(int column) const override {
    return PQgetisnull(result_.get(), row_, column) != 0;
  }
  [[nodiscard]] std::int64_t integer(int column) const override {
    return is_null(column) ? 0 : std::strtoll(PQgetvalue(result_.get(), row_, column), nullptr, 10);
  }
  [[nodiscard]] double real(int column) const override {
    return is_null(column) ? std::numeric_limits<double>::quiet_NaN()
                           : std::strtod(PQgetvalue(result_.get(), row_, column), nullptr);
  }
  [[nodiscard]] std::string_view text_view(int column) const override {
    return is_null(column)
               ? std::string_view()
               : std::string_view(PQgetvalue(result_.get(), row_, column),
                                  static_cast<std::size_t>(PQgetlength(result_.get(), row_, column)));
  }
  [[nodiscard]] std::string text(int column) const override {
    return is_null(column) ? std::string()
                           : std::string(PQgetvalue(result_.get(), row_, column),
                                         static_cast<std::size_t>(PQgetlength(result_.get(), row_, column)));
  }

 private:
  Statement& set(int index, std::optional<std::string> value) {
    if (index < 1 || static_cast<std::size_t>(index) > params_.size()) {
      throw DbError(fmt::format("database '{}': bind: parameter {} of {} (in: {})", *name_, index,
                                params_.size(), first_line(sql_)));
    }
    params_[static_cast<std::size_t>(index - 1)] = std::move(value);
    return *this;
  }

  PGconn* c_;
  const std::string* name_;  // the connection's, which outlives its statements
  std::string sql_;
  std::vector<std::optional<std::string>> params_;
  ResultHandle result_;
  int row_ = -1;
  std::uint64_t runs_ = 0;
  std::uint64_t* prepared_count_;  // the connection's: server-side names are unique in its session
  std::string server_name_;        // set once prepared on the server
};

class PostgresqlConnection final : public Connection {
 public:
  PostgresqlConnection(ConnectionHandle c, std::string name, bool read_only)
      : c_(std::move(c)), name_(std::move(name)), read_only_(read_only) {}

  [[nodiscard]] const Dialect& dialect() const noexcept override { return kPostgresql; }
  [[nodiscard]] const std::string& name() const noexcept override { return name_; }
  [[nodiscard]] bool read_only() const noexcept override { return read_only_; }

  void exec(std::string_view sql) override {
    const std::string text(sql);
    checked(c_.get(), PQexec(c_.get(), text.c_str()), name_, sql);
  }

  std::unique_ptr<Statement> prepare(std::string_view sql) override {
    int parameters = 0;
    std::string text = numbered_parameters(sql, parameters);
    return std::make_unique<PostgresqlStatement>(c_.get(), name_, std::move(text), parameters, prepared_);
  }

 private:
  ConnectionHandle c_;
  std::string name_;
  bool read_only_;
  std::uint64_t prepared_ = 0;  // statements prepared on the server so far
};

void ignore_notice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

std::unique_ptr<Connection> open_postgresql(const std::string& url, OpenMode mode, std::string_view what) {
  const std::string name = masked_url(url);
  ConnectionHandle c(PQconnectdb(url.c_str()));
  if (!c) {
    throw InputError(fmt::format("{} '{}': cannot connect: out of memory", what, name));
  }
  if (PQstatus(c.get()) != CONNECTION_OK) {
    throw InputError(fmt::format("{} '{}': cannot connect: {}", what, name, message(c.get())));
  }
  PQsetNoticeProcessor(c.get(), ignore_notice, nullptr);
  const bool read_only = mode == OpenMode::read_only;
  auto connection = std::make_unique<PostgresqlConnection>(std::move(c), name, read_only);
  // Text in UTF-8 whatever the database's encoding, and numbers as text that reads back exactly (PostgreSQL
  // 12 and newer do so by default; older ones are asked to).
  connection->exec("SET client_encoding = 'UTF8'; SET extra_float_digits = 3");
  if (read_only) {
    connection->exec("SET default_transaction_read_only = on");
  }
  return connection;
}

bool postgresql_built() noexcept {
  return true;
}

}  // namespace memstress::db
