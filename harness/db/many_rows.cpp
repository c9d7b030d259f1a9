// Statements over many rows at once (many_rows.hpp).

#include "harness/db/many_rows.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memstress::db {

Statement& StatementCache::get(const std::string& sql) {
  auto at = statements_.find(sql);
  if (at == statements_.end()) {
    at = statements_.emplace(sql, connection_->prepare(sql)).first;
  } else {
    at->second->reset();
  }
  return *at->second;
}

Statement& StatementCache::get(const std::string& key, const std::function<std::string()>& make) {
  const auto at = by_key_.find(key);
  if (at != by_key_.end()) {
    at->second->reset();
    return *at->second;
  }
  Statement& s = get(make());
  by_key_.emplace(key, &s);
  return s;
}

ManyRows::ManyRows(std::string head, std::string row, std::size_t columns, std::string tail)
    : head_(std::move(head)),
      row_(std::move(row)),
      tail_(std::move(tail)),
      columns_(std::max<std::size_t>(1, columns)) {}

ManyRows& ManyRows::own(std::string v) {
  owned_.push_back(std::move(v));
  return push(std::string_view(owned_.back()));
}

void ManyRows::clear() {
  values_.clear();
  owned_.clear();
}

std::string ManyRows::text(std::size_t rows) const {
  std::string sql = head_;
  sql.reserve(head_.size() + rows * (row_.size() + 2) + tail_.size() + 2);
  for (std::size_t i = 0; i < rows; ++i) {
    sql += i == 0 ? " " : ", ";
    sql += row_;
  }
  sql += " ";
  sql += tail_;
  return sql;
}

void ManyRows::run(StatementCache& cache, const std::function<void(Statement&)>& each) {
  const std::size_t per_statement = std::max<std::size_t>(1, kMaxParameters / columns_);
  const std::size_t total = rows();
  for (std::size_t first = 0; first < total; first += per_statement) {
    const std::size_t n = std::min(per_statement, total - first);
    // Known by its parts and its number of rows: the full text (thousands of letters for a file's metrics) is
    // made once.
    Statement& s =
        cache.get(fmt::format("{}\x1f{}\x1f{}\x1f{}", head_, row_, tail_, n), [&] { return text(n); });
    int index = 1;
    for (std::size_t i = first * columns_; i < (first + n) * columns_; ++i, ++index) {
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
              s.bind_null(index);
            } else if constexpr (std::is_same_v<T, std::string_view>) {
              s.bind_view(index, v);  // the rows' texts live until run() returns
            } else {
              s.bind(index, v);
            }
          },
          values_[i]);
    }
    while (s.step()) {
      if (each) {
        each(s);
      }
    }
    s.reset();
  }
  clear();
}

ManyRows id_list(std::string head, const std::vector<std::int64_t>& ids, std::string tail) {
  ManyRows list(std::move(head), "?", 1, std::move(tail));
  for (const std::int64_t id : ids) {
    list.add(id);
  }
  return list;
}

void for_each_chunk(const std::vector<std::int64_t>& ids, std::size_t chunk,
                    const std::function<void(const std::vector<std::int64_t>&)>& each) {
  for (std::size_t first = 0; first < ids.size(); first += chunk) {
    each(std::vector<std::int64_t>(
        ids.begin() + static_cast<std::ptrdiff_t>(first),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), first + chunk))));
  }
}

}  // namespace memstress::db
