#pragma once

// TraceWriter: appends events to a memstress trace file (format: harness/trace/trace_format.md).
//
// Design note. One writer per trace, shared by every thread that allocates through the traced allocator,
// so `write` takes a mutex; the sequence number and timestamp are taken under it, so file order, `seq`
// order and time order agree. Lines are formatted into a buffer that goes to the file every
// `flush_lines` lines, after every `oom` line (an OOM is often the last thing before a crash), on
// `flush()` and at destruction. A process that crashes loses at most the lines still in the buffer;
// every line that reached the file is complete except possibly the last, and readers reject a torn
// last line as malformed. The file is owned through a unique_ptr with an fclose deleter; the writer is
// move-only (its state lives behind a pointer, so the mutex never moves). A moved-from writer may only
// be destroyed or assigned to.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "harness/trace/trace_event.hpp"

namespace memstress {

class TraceWriter {
 public:
  static constexpr std::size_t kDefaultFlushLines = 1024;

  // Creates (or truncates) `path` and writes the two header lines; every event names `device`.
  // Throws InputError naming the path when it cannot be opened or written.
  TraceWriter(const std::filesystem::path& path, std::string device,
              std::size_t flush_lines = kDefaultFlushLines);
  ~TraceWriter();  // flushes; a failure is reported on stderr
  TraceWriter(TraceWriter&& other) noexcept;
  TraceWriter& operator=(TraceWriter&& other) noexcept;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends one event, stamped with the next sequence number and the time since construction, and
  // returns that sequence number. `id` is required for alloc and free and absent for oom.
  // Throws EnvironmentError naming the path when the file cannot be written (e.g. the disk is full).
  std::uint64_t write(TraceAction action, std::optional<std::uint64_t> id, std::uint64_t bytes,
                      std::uint64_t stream);
  // Writes the buffered lines to the file and flushes it. Throws EnvironmentError as write does.
  void flush();

  [[nodiscard]] const std::filesystem::path& path() const noexcept;
  [[nodiscard]] std::uint64_t events_written() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace memstress
