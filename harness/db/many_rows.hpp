#pragma once

// Statements over many rows at once: `INSERT INTO t (a, b) VALUES (?, ?), (?, ?), ...`, `... WHERE id IN (?,
// ?, ...)`, `UPDATE ... FROM (VALUES ...)`, in as few statements as the backends' limits on parameters allow.
//
// Note [Many rows a statement]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// On PostgreSQL a statement is a round trip to the server: an ingest that wrote a row a statement (a file's
// hundred metrics, its rows, its ranks) spent most of its time waiting for answers, some 80 files a second.
// So the store writes a file's rows of each table in one statement, and a batch's summaries in a few, on both
// backends (SQLite gains too: fewer statements prepared and stepped). The texts repeat (a fleet's files have
// the same shape), so each text is prepared once a batch (StatementCache). Values are bound in order; texts a
// row stands in (a case label, a sample list) are views of what the caller keeps alive until run() returns,
// or copies the rows own (own()). A statement holds at most kMaxParameters parameters (SQLite's default limit
// is 32,766, PostgreSQL's 65,535); more rows are split over several statements, each run in turn.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "harness/db/connection.hpp"

namespace memstress::db {

inline constexpr std::size_t kMaxParameters = 30'000;

// Prepared statements kept by their text, for as long as the cache lives (a batch: Note [Many rows a
// statement]).
class StatementCache {
 public:
  explicit StatementCache(Connection& connection) : connection_(&connection) {}
  // The statement of `sql`, reset and without bindings.
  Statement& get(const std::string& sql);
  // The same, known by a short `key` (the text made only the first time: `make`).
  Statement& get(const std::string& key, const std::function<std::string()>& make);
  [[nodiscard]] Connection& connection() const noexcept { return *connection_; }

 private:
  Connection* connection_;
  std::unordered_map<std::string, std::unique_ptr<Statement>> statements_;
  std::unordered_map<std::string, Statement*> by_key_;
};

class ManyRows {
 public:
  using Value = std::variant<std::monostate, std::int64_t, double, std::string_view>;

  // `head` + " " + `row` repeated, comma-separated + " " + `tail`: head "INSERT INTO t (a, b) VALUES", row
  // "(?, ?)" (its parameters: `columns`), tail "RETURNING id" or "". A row of one parameter and a head ending
  // in "IN (" with tail ")" makes a list.
  ManyRows(std::string head, std::string row, std::size_t columns, std::string tail);

  ManyRows& add(std::int64_t v) { return push(v); }
  ManyRows& add(int v) { return push(static_cast<std::int64_t>(v)); }
  ManyRows& add(std::size_t v) { return push(static_cast<std::int64_t>(v)); }
  ManyRows& add(double v) { return push(v); }
  ManyRows& add(std::string_view v) { return push(v); }
  ManyRows& add(const std::string& v) { return push(std::string_view(v)); }
  ManyRows& add(const char* v) { return push(std::string_view(v)); }
  ManyRows& add_null() { return push(std::monostate{}); }
  // A text the rows keep until clear().
  ManyRows& own(std::string v);

  [[nodiscard]] std::size_t rows() const noexcept { return values_.size() / columns_; }
  [[nodiscard]] bool empty() const noexcept { return values_.empty(); }
  void clear();

  // Runs the statements over every row added (nothing when none), calling `each` with every row they return;
  // then clear().
  void run(StatementCache& cache, const std::function<void(Statement&)>& each = {});

 private:
  ManyRows& push(Value v) {
    values_.push_back(v);
    return *this;
  }
  [[nodiscard]] std::string text(std::size_t rows) const;

  std::string head_, row_, tail_;
  std::size_t columns_;
  std::vector<Value> values_;
  std::deque<std::string> owned_;
};

// A list statement over `ids`: head "SELECT ... WHERE id IN (", tail ")".
ManyRows id_list(std::string head, const std::vector<std::int64_t>& ids, std::string tail);

// `each` over `ids` a chunk of at most `chunk` at a time (statements that read what an earlier one wrote, or
// lists bounded for the planner).
void for_each_chunk(const std::vector<std::int64_t>& ids, std::size_t chunk,
                    const std::function<void(const std::vector<std::int64_t>&)>& each);

}  // namespace memstress::db
