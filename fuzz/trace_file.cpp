// A trace read from its file, plain or gzip (replay::read_replay_trace through TraceLines: the streaming
// reader that decompresses as it goes, harness/trace/trace_lines.hpp), against the same bytes parsed in
// memory (replay::parse_replay_trace). The promise: where the text lies, or how it is compressed, changes
// nothing: the three readings all refuse it, or all give the same events. And the input taken as a file
// of its own (a gzip stream when it starts with gzip's magic bytes, corrupt or cut short as the fuzzer
// makes it) is read or refused with memstress's error, never a crash.
//
// Each input is written to two files in a directory of this process's own under the system's temporary
// directory, removed when the process ends.

#include <zlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "fuzz/fuzz_target.hpp"
#include "fuzz/scratch.hpp"
#include "harness/replay/replay_trace.hpp"

namespace {

namespace fs = std::filesystem;

struct GzWriteCloser {
  void operator()(gzFile_s* file) const noexcept { gzclose_w(file); }
};

void write_gzip(const fs::path& path, std::string_view bytes) {
  const std::unique_ptr<gzFile_s, GzWriteCloser> out(gzopen(path.c_str(), "wb"));
  memstress::fuzz::check(out != nullptr, "cannot open the fuzz input's gzip file");
  if (!bytes.empty()) {
    memstress::fuzz::check(gzwrite(out.get(), bytes.data(), static_cast<unsigned>(bytes.size())) ==
                               static_cast<int>(bytes.size()),
                           "cannot write the fuzz input's gzip file");
  }
}

// The trace, or nothing when the reader refused it with memstress's error (any other exception escapes to
// fuzz::run, a finding).
template <typename Read>
std::optional<memstress::replay::ReplayTrace> reading(Read&& read) {
  try {
    return read();
  } catch (const memstress::Error&) {
    return std::nullopt;
  }
}

bool same(const memstress::replay::ReplayTrace& a, const memstress::replay::ReplayTrace& b) {
  return a.devices == b.devices && a.events == b.events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  static const fuzz::Scratch scratch(
      "trace");  // one directory for the process's life (libFuzzer calls us in one thread)
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const fs::path plain = scratch.file("input.trace.csv");
    const fs::path gzip = scratch.file("input.trace.csv.gz");
    fuzz::write_file(plain, input);
    write_gzip(gzip, input);

    const auto in_memory = reading([&] { return replay::parse_replay_trace(input, "fuzz.trace.csv"); });
    const auto from_gzip = reading([&] { return replay::read_replay_trace(gzip); });
    fuzz::check(in_memory.has_value() == from_gzip.has_value(),
                "a trace read from its gzip file is refused one way and read the other");
    if (in_memory) {
      fuzz::check(same(*in_memory, *from_gzip), "a trace read from its gzip file differs from its text");
    }
    // The plain file is the input as a file of its own: a gzip stream as the fuzzer made it (corrupt, cut
    // short) when it starts with gzip's magic, which is read as compressed whatever the text would say.
    const auto from_plain = reading([&] { return replay::read_replay_trace(plain); });
    if (!input.starts_with("\x1f\x8b")) {
      fuzz::check(in_memory.has_value() == from_plain.has_value(),
                  "a trace read from its file is refused one way and read the other");
      if (in_memory) {
        fuzz::check(same(*in_memory, *from_plain), "a trace read from its file differs from its text");
      }
    }
  });
}
