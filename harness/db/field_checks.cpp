// The fields the store refuses (field_checks.hpp).

#include "harness/db/field_checks.hpp"

#include <fmt/format.h>

#include <string_view>

#include "harness/core/error.hpp"
#include "harness/core/iso_time.hpp"
#include "harness/core/text_table.hpp"

namespace memstress::db {
namespace {

void check_text(std::string_view field, std::string_view value) {
  if (value.size() > kMaxTextFieldBytes) {
    throw InputError(
        fmt::format("field {}: {} bytes, longer than the {} a text field may be (docs/limits.md)", field,
                    value.size(), kMaxTextFieldBytes));
  }
  if (const std::size_t at = value.find('\0'); at != std::string_view::npos) {
    throw InputError(fmt::format(
        "field {}: holds a NUL character (\\u0000) at byte {} ('{}'), which the store cannot keep", field,
        at + 1, printable(value, 60)));
  }
}

void check_row(const ResultRow& row) {
  check_text("workload", row.workload);
  check_text("case", row.case_label);
  for (const auto& [key, value] : row.params) {
    check_text("params (a name)", key);
    check_text(fmt::format("params.{}", printable(key, 40)), value);
  }
  check_text("allocator", row.allocator);
  check_text("device.name", row.device);
  check_text("device.label", row.gpu.label);
  check_text("device.uuid", row.gpu.uuid);
  check_text("reason", row.reason);
  for (const MetricResult& m : row.metrics) {
    check_text("metrics (a name)", m.name);
    check_text(fmt::format("metrics.{}.unit", printable(m.name, 40)), m.unit);
  }
}

void check_rank(const RankIdentity& id) {
  const std::string at = fmt::format("environment.ranks[{}].", id.rank);
  check_text(at + "host.name", id.host);
  check_text(at + "driver.version", id.driver);
  check_text(at + "driver.cuda_driver_version", id.cuda_driver);
  check_text(at + "cuda_runtime.version", id.cuda_runtime);
  check_text(at + "nccl.version", id.nccl);
  check_text(at + "device.uuid", id.device_uuid);
  for (std::size_t i = 0; i < id.gpus.size(); ++i) {
    const SeenGpu& g = id.gpus[i];
    const std::string gpu = fmt::format("{}gpus[{}].", at, i);
    check_text(gpu + "uuid", g.uuid);
    check_text(gpu + "name", g.name);
    check_text(gpu + "pci_bus_id", g.pci_bus_id);
    check_text(gpu + "serial", g.serial);
  }
}

}  // namespace

void check_storable(const Results& results) {
  check_text("started_at", results.started_at);
  if (!results.started_at.empty() && !valid_iso8601(results.started_at, TimeZone::any_offset)) {
    throw InputError(fmt::format("field started_at: '{}' is not a date and time (ISO 8601, e.g. {})",
                                 printable(results.started_at, 60), "2026-11-21T14:03:05Z"));
  }
  check_text("status", results.status);
  for (const std::string& word : results.argv) {
    check_text("argv", word);
  }
  for (const std::string& workload : results.in_turn) {
    check_text("config.in_turn", workload);
  }
  for (const RankIdentity& id : results.identities) {
    check_rank(id);  // first: named by their place in the file, where the facts below are named by label
  }
  for (const auto& [label, value] : results.environment) {
    check_text("environment (a fact's name)", label);
    check_text(fmt::format("environment ({})", printable(label, 40)), value);
  }
  for (std::size_t i = 0; i < results.rows.size(); ++i) {
    try {
      check_row(results.rows[i]);
    } catch (const InputError& e) {
      throw InputError(fmt::format("row {}: {}", i + 1, e.what()));
    }
  }
}

}  // namespace memstress::db
