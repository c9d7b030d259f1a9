// The run as a JSON document: its header (also the first line of the .jsonl stream) and the whole.

#include "harness/core/planted_faults.hpp"
#include "harness/results/rank_summary.hpp"
#include "harness/results/row.hpp"

namespace memstress {

nlohmann::json header_json(const RunRecord& run) {
  nlohmann::json j{
      {"schema", kSchemaId},
      {"memstress", {{"version", run.tool_version}, {"git_sha", run.git_sha}}},
      {"argv", run.argv},
      {"started_at", run.started_at},
      {"ended_at", run.ended_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(run.ended_at)},
      {"status", to_string(run.status)},
      {"abort_reason", run.abort_reason},
      {"config", run.config.is_null() ? nlohmann::json::object() : run.config},
      {"environment", run.environment.is_null() ? nlohmann::json::object() : run.environment},
  };
  if (fault_hooks_built()) {
    j["memstress"]["fault_hooks"] = true;  // Note [Planted faults]: results for tests only
  }
  return j;
}

nlohmann::json run_skeleton(const RunRecord& run, const VerdictCounts& counts, std::size_t rows) {
  nlohmann::json j = header_json(run);
  j["summary"] = {{"rows", rows},
                  {"pass", counts.pass},
                  {"fail", counts.fail},
                  {"skip", counts.skip},
                  {"error", counts.error}};
  if (run.ranks > 1 && !run.rows.empty()) {
    j["rank_summary"] =
        rank_summary_json(summarize_ranks(run.rows, run.straggler_threshold), run.straggler_threshold);
  }
  return j;
}

nlohmann::json run_json(const RunRecord& run) {
  nlohmann::json j = run_skeleton(run, count_verdicts(run.rows), run.rows.size());
  j["rows"] = run.rows;
  return j;
}

}  // namespace memstress
