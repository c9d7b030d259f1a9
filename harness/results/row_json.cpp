// A row and its metrics in their JSON form (results/schema/), and read back: how rank 0 receives the rows
// of the other ranks of a job.

#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/results/row.hpp"

namespace memstress {

void to_json(nlohmann::json& j, const MetricResult& m) {
  const Summary& s = m.summary;
  j = nlohmann::json{{"unit", m.unit},
                     {"better", to_string(m.better)},
                     {"n", s.n},
                     {"median", s.median},
                     {"p10", s.p10},
                     {"p90", s.p90},
                     {"p99", s.p99},
                     {"min", s.min},
                     {"max", s.max},
                     {"mean", s.mean},
                     {"stddev", s.stddev},
                     {"cv", s.cv},
                     {"samples", m.samples}};
}

MetricResult read_metric(const JsonField& j, std::string name) {
  MetricResult m;
  m.name = std::move(name);
  m.unit = j["unit"].string();
  const JsonField better_field = j["better"];
  const std::string better = better_field.string();
  const auto b = better_from_string(better);
  if (!b) {
    throw InputError(
        fmt::format("field {}: '{}': expected higher, lower or none", better_field.path(), better));
  }
  m.better = *b;
  Summary& s = m.summary;
  s.n = static_cast<std::size_t>(j["n"].count());
  s.median = j["median"].real();
  s.p10 = j["p10"].real();
  s.p90 = j["p90"].real();
  s.p99 = j["p99"].real();
  s.min = j["min"].real();
  s.max = j["max"].real();
  s.mean = j["mean"].real();
  s.stddev = j["stddev"].real();
  s.cv = j["cv"].real();
  for (const JsonField& v : j["samples"].elements()) {
    m.samples.push_back(v.real());
  }
  return m;
}

void from_json(const nlohmann::json& j, MetricResult& m) {
  m = read_metric(JsonField(j), std::move(m.name));
}

void to_json(nlohmann::json& j, const Row& row) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [key, value] : row.params) {
    params[key] = value;
  }
  nlohmann::json metrics = nlohmann::json::object();
  for (const MetricResult& m : row.metrics) {
    metrics[m.name] = m;
  }
  j = nlohmann::json{
      {"workload", row.workload},
      {"case", row.case_label()},
      {"params", params},
      {"allocator", row.allocator},
      {"rank", row.rank},
      {"device",
       {{"label", row.device.label},
        {"kind", row.device.kind},
        {"ordinal", row.device.ordinal},
        {"name", row.device.name},
        {"uuid", row.device.uuid}}},
      {"verdict", to_string(row.verdict)},
      {"reason", row.reason},
      {"verification", {{"checked", row.checked}, {"errors", row.errors}}},
      {"metrics", metrics},
      {"notes", row.notes},
      {"allocator_stats", row.allocator_stats.is_null() ? nlohmann::json::object() : row.allocator_stats},
      {"started_at", row.started_at},
      {"seconds", row.seconds},
  };
  if (!row.headline.empty()) {
    j["headline"] = row.headline;  // only where the row has metrics: files without it read as before
  }
  if (!row.self_test.empty()) {
    j["self_test"] = row.self_test;  // only on self-tests: other rows read as before
  }
  if (!row.device.node.empty()) {
    j["device"]["node"] = row.device.node;  // only under mpirun: a world of one has no node name
  }
}

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
                         device.at("ordinal").get<int>(),       device.at("name").get<std::string>(),
                         device.at("uuid").get<std::string>(),  device.value("node", std::string())};
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
  row.headline = j.contains("headline") ? j.at("headline").get<std::string>() : std::string();
  if (!row.headline.empty() && row.metric(row.headline) == nullptr) {
    throw InputError(
        fmt::format("row of {}: headline '{}' is not among its metrics", row.workload, row.headline));
  }
}

}  // namespace memstress
