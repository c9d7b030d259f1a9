#include "harness/run/sink.hpp"

#include <fmt/format.h>

#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"

namespace memstress {

std::filesystem::path ResultSink::stream_path(const std::filesystem::path& out) {
  std::filesystem::path p = out;
  if (p.extension() == ".json") {
    return p.replace_extension(".jsonl");
  }
  return p.string() + ".jsonl";
}

ResultSink::ResultSink(RunRecord header, std::optional<std::filesystem::path> out)
    : run_(std::move(header)), out_(std::move(out)) {
  if (!out_) {
    return;
  }
  const std::filesystem::path jsonl = stream_path(*out_);
  stream_.open(jsonl, std::ios::out | std::ios::trunc);
  if (!stream_) {
    throw InputError(
        fmt::format("--out {}: cannot write the results stream {}", out_->string(), jsonl.string()));
  }
  nlohmann::json h = header_json(run_);
  h["type"] = "header";
  write_line(h);
}

void ResultSink::write_line(const nlohmann::json& j) {
  stream_ << j.dump() << '\n';
  stream_.flush();
}

void ResultSink::append(Row row) {
  if (out_) {
    nlohmann::json j = row;
    j["type"] = "row";
    write_line(j);
  }
  run_.rows.push_back(std::move(row));
}

void ResultSink::finish(RunStatus status, std::string abort_reason) {
  run_.status = status;
  run_.abort_reason = std::move(abort_reason);
  run_.ended_at = utc_now_iso8601();
  if (!out_) {
    return;
  }
  const nlohmann::json doc = run_json(run_);
  write_line({{"type", "footer"},
              {"status", to_string(status)},
              {"abort_reason", run_.abort_reason},
              {"ended_at", run_.ended_at},
              {"summary", doc["summary"]}});
  write_file_atomically(*out_, doc.dump(2) + "\n", "--out");
}

}  // namespace memstress
