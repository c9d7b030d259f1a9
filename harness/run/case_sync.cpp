#include "harness/run/case_sync.hpp"

#include <fmt/format.h>

#include "harness/core/json_input.hpp"
#include "harness/core/json_text.hpp"
#include "harness/dist/dist_error.hpp"
#include "harness/dist/world.hpp"

namespace memstress {

void align_ranks(World& world, std::string_view title) {
  if (world.size() == 1) {
    return;
  }
  try {
    world.barrier();
  } catch (const DistError& e) {
    throw DistError(fmt::format("before case {}: {}", title, e.what()));
  }
}

std::vector<Row> gather_rows(World& world, Row row, std::string_view title) {
  if (world.size() == 1) {
    std::vector<Row> rows;
    rows.push_back(std::move(row));
    return rows;
  }
  std::vector<std::string> texts;
  try {
    texts = world.gather(json_text(nlohmann::json(row)));
  } catch (const DistError& e) {
    throw DistError(fmt::format("case {}: {}", title, e.what()));
  }
  std::vector<Row> rows;
  rows.reserve(texts.size());
  for (std::size_t r = 0; r < texts.size(); ++r) {
    try {
      rows.push_back(parse_json_input(texts[r]).get<Row>());
    } catch (const std::exception& e) {
      throw DistError(fmt::format("case {}: the row of rank {} does not read back: {}", title, r, e.what()));
    }
  }
  return rows;
}

}  // namespace memstress
