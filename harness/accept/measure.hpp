#pragma once

// What a check measures in a set of rows (Note [Judging a check] in judge.hpp): the rows it matches and the
// worst value over them, or the sum of a count. Judging (judge.cpp) and training (train.cpp) both start here.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "harness/accept/profile.hpp"
#include "harness/results/read.hpp"

namespace memstress {

// The rows a profile judges: from this run (result_row) or from results files, read and their
// types checked by load_results.
using AcceptRows = std::vector<ResultRow>;

// One matched row's value for a check: its metric's median, or its own share of a count (data errors; 1 for a
// row that did not pass).
struct RowValue {
  const ResultRow* row = nullptr;
  double value = 0;
};

struct Measured {
  double value = 0;
  bool higher_better = true;
  bool is_sum = false;  // verification.errors and verdict add their rows up
  std::string unit;
  std::size_t rows = 0;          // the rows it is of: every matched row of a count, else those with a value
  std::vector<RowValue> values;  // the rows that gave a value
};

// Whether `row` is of the check's workload and has every parameter its `where` names.
[[nodiscard]] bool matches(const ResultRow& row, const AcceptCheck& check);
// The check's value over the matched rows; nullopt where no matched row gave one. A metric's value is taken
// from rows that passed alone (a failed or errored row's figures are not judged); `verdict` and
// `verification.errors` count every matched row.
[[nodiscard]] std::optional<Measured> measure(const AcceptCheck& check, const AcceptRows& rows);

}  // namespace memstress
