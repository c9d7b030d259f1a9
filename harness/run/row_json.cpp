// Reading a row back from its JSON form (to_json in result.cpp): how rank 0 receives the rows of the
// other ranks of a job.

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/run/result.hpp"

namespace memstress {

void from_json(const nlohmann::json& j, Row& row) {
  row.workload = j.at("workload").get<std::string>();
  row.params.clear();
  // The axis order is the case label's (to_json writes params as an object, which sorts its keys).
  const std::string label = j.at("case").get<std::string>();
  const nlohmann::json& params = j.at("params");
  for (std::size_t start = 0; start < label.size();) {
    const std::size_t end = std::min(label.find(' ', start), label.size());
    const std::string item = label.substr(start, end - start);
    const std::string key = item.substr(0, item.find('='));
    if (!params.contains(key)) {
      throw InputError(fmt::format("row of {}: case '{}' names '{}', which is not among its params",
                                   row.workload, label, key));
    }
    row.params.emplace_back(key, params.at(key).get<std::string>());
    start = end + 1;
  }
  row.allocator = j.at("allocator").get<std::string>();
  row.rank = j.at("rank").get<int>();
  const nlohmann::json& device = j.at("device");
  row.device = DeviceRef{device.at("label").get<std::string>(), device.at("kind").get<std::string>(),
                         device.at("ordinal").get<int>(), device.at("name").get<std::string>(),
                         device.at("uuid").get<std::string>()};
  row.metrics.clear();
  for (const auto& [name, value] : j.at("metrics").items()) {
    MetricResult m = value.get<MetricResult>();
    m.name = name;
    row.metrics.push_back(std::move(m));
  }
  row.checked = j.at("verification").at("checked").get<std::uint64_t>();
  row.errors = j.at("verification").at("errors").get<std::uint64_t>();
  const auto verdict = verdict_from_string(j.at("verdict").get<std::string>());
  if (!verdict) {
    throw InputError(fmt::format("row of {}: unknown verdict {}", row.workload, json_text(j.at("verdict"))));
  }
  row.verdict = *verdict;
  row.reason = j.at("reason").get<std::string>();
  row.notes = j.at("notes").get<std::vector<std::string>>();
  row.allocator_stats = j.at("allocator_stats");
  row.started_at = j.at("started_at").get<std::string>();
  row.seconds = j.at("seconds").get<double>();
  row.self_test = j.contains("self_test") ? j.at("self_test").get<std::string>() : std::string();
}

}  // namespace memstress
