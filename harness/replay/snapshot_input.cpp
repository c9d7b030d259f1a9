#include "harness/replay/snapshot_input.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <vector>

#include "harness/core/data_dir.hpp"
#include "harness/core/error.hpp"
#include "harness/core/launcher.hpp"
#include "harness/trace/trace_file.hpp"

namespace memstress::replay {
namespace {

constexpr std::string_view kRmmHeader = "Thread,Time,Action";  // rmm::mr::logging_resource_adaptor's CSV
constexpr char kPickleProto = '\x80';                          // pickle protocol 2 and later begin so
constexpr int kExitBadInput = 2;
constexpr int kExitEnvMissing = 3;
constexpr int kExitNotFound = 127;  // /usr/bin/env found no python3
constexpr std::string_view kConverter = "memstress.convert";

}  // namespace

InputKind input_kind(const std::filesystem::path& path) {
  const std::string head = read_trace_prefix(path, "trace", 64);
  if (!head.empty() && head.front() == kPickleProto) {
    return InputKind::torch_snapshot;
  }
  if (head.rfind(kRmmHeader, 0) == 0) {
    return InputKind::rmm_log;
  }
  return InputKind::memstress_trace;
}

ConvertedTrace::ConvertedTrace(const std::filesystem::path& input, bool with_facts)
    : dir_("replay"), trace_(dir_.path() / "converted.trace.csv.gz") {
  const std::string what = fmt::format("converting {}", input.string());
  std::vector<std::string> args{input.string(), "-o", trace_.string()};  // another program's command line
  if (with_facts) {
    facts_ = dir_.path() / "facts.json";
    args.insert(args.end(), {"--facts", facts_.string(), "--quiet"});  // another program's command line
  }
  // Its refusal of the input is memstress's: printed as memstress prints its errors ("memstress: error: "),
  // and only once.
  std::string prog = note_prefix();  // "memstress: "
  prog.resize(prog.size() - 2);
  const int rc = run_program(python_module(kConverter, args, prog, what), what);
  if (rc == 0) {
    return;
  }
  if (rc == kExitBadInput) {
    throw ReportedInputError(
        fmt::format("{}: the converter ({}) rejected it (its message is above)", input.string(), kConverter));
  }
  if (rc == kExitEnvMissing || rc == kExitNotFound) {
    throw EnvironmentError(fmt::format(
        "{}: the converter ({}) could not run: it needs python3 (3.9 or newer)", what, kConverter));
  }
  throw Error(ExitCode::check_failed,
              fmt::format("{}: the converter ({}) failed with exit code {}", what, kConverter, rc));
}

}  // namespace memstress::replay
