#include "harness/results/sink.hpp"

#include <fmt/format.h>

#include "harness/core/atomic_file.hpp"
#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"

namespace memstress {
namespace {

RowSpool open_spool(const std::optional<std::filesystem::path>& out, std::string_view what) {
  if (!out) {
    return RowSpool::anonymous();
  }
  check_output_path(*out, what);
  const std::filesystem::path jsonl = ResultSink::stream_path(*out);
  check_output_path(jsonl, what);
  return RowSpool::for_output(jsonl, *out, what);
}

// What the table, CSV, JUnit, rank summary and accept read of a row (Note [Rows on disk, digests in memory]).
Row digest(Row row) {
  for (MetricResult& m : row.metrics) {
    m.samples.clear();
    m.samples.shrink_to_fit();
  }
  row.allocator_stats = nullptr;
  return row;
}

// `text` with `indent` spaces before each of its lines.
std::string indented(std::string_view text, std::string_view indent) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  out += indent;
  for (const char c : text) {
    out += c;
    if (c == '\n') {
      out += indent;
    }
  }
  return out;
}

}  // namespace

std::filesystem::path ResultSink::stream_path(const std::filesystem::path& out) {
  std::filesystem::path p = out;
  if (p.extension() == ".json") {
    return p.replace_extension(".jsonl");
  }
  return p.string() + ".jsonl";
}

ResultSink::ResultSink(RunRecord header, std::optional<std::filesystem::path> out, std::string out_what,
                       bool digests)
    : run_(std::move(header)),
      out_(std::move(out)),
      out_what_(std::move(out_what)),
      spool_(open_spool(out_, out_what_)),
      digests_(digests) {
  if (out_) {
    nlohmann::json h = header_json(run_);
    h["type"] = "header";
    spool_.append(json_text(h));
  }
}

void ResultSink::append(Row row) {
  nlohmann::json j = row;
  j["type"] = "row";
  const std::string line = json_text(j);
  const std::lock_guard lock(mutex_);
  if (finished_) {
    return;
  }
  spool_.append(line);
  counts_.add(row.verdict);
  ++appended_;
  if (digests_) {
    run_.rows.push_back(digest(std::move(row)));
  }
}

std::size_t ResultSink::rows() const {
  const std::lock_guard lock(mutex_);
  return appended_;
}

std::vector<Row> ResultSink::full_rows() const {
  const std::lock_guard lock(mutex_);
  std::vector<Row> rows;
  spool_.for_each_row([&](nlohmann::json&& j) { rows.push_back(j.get<Row>()); });
  return rows;
}

bool ResultSink::finish(RunStatus status, std::string abort_reason) {
  const std::lock_guard lock(mutex_);
  if (finished_) {
    return false;
  }
  finished_ = true;
  run_.status = status;
  run_.abort_reason = std::move(abort_reason);
  run_.ended_at = utc_now_iso8601();
  if (!out_) {
    return true;
  }
  const nlohmann::json summary = run_skeleton(run_, counts_, appended_)["summary"];
  spool_.append(json_text({{"type", "footer"},
                           {"status", to_string(status)},
                           {"abort_reason", run_.abort_reason},
                           {"ended_at", run_.ended_at},
                           {"summary", summary}}));
  AtomicFileWriter file(*out_, out_what_);
  write_document_locked([&](std::string_view piece) { file.write(piece); });
  file.commit();
  return true;
}

void ResultSink::write_document(const std::function<void(std::string_view)>& emit) const {
  const std::lock_guard lock(mutex_);
  write_document_locked(emit);
}

void ResultSink::write_document_locked(const std::function<void(std::string_view)>& emit) const {
  nlohmann::json skeleton = run_skeleton(run_, counts_, appended_);  // the summaries, not the digests
  skeleton["rows"] = nlohmann::json::array();
  const std::string text = json_text(skeleton, 2) + "\n";
  static constexpr std::string_view kRows = "\n  \"rows\": []";
  const std::size_t at = text.find(kRows);
  if (at == std::string::npos || appended_ == 0) {
    emit(text);
    return;
  }
  const std::string_view whole(text);
  emit(whole.substr(0, at));
  emit("\n  \"rows\": [\n");
  bool first = true;
  spool_.for_each_row([&](nlohmann::json&& row) {
    if (!first) {
      emit(",\n");
    }
    first = false;
    emit(indented(json_text(row, 2), "    "));
  });
  emit("\n  ]");
  emit(whole.substr(at + kRows.size()));
}

}  // namespace memstress
