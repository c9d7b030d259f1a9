#include "harness/trace/trace_writer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const noexcept { static_cast<void>(std::fclose(file)); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string errno_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

}  // namespace

struct TraceWriter::State {
  std::filesystem::path path;
  std::string device;
  std::size_t flush_lines = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  mutable std::mutex mutex;
  File file;
  std::string buffer;
  std::size_t buffered_lines = 0;
  std::uint64_t next_seq = 0;

  // Writes the buffer out; returns errno (0 on success). Needs the mutex.
  int drain() noexcept {
    errno = 0;
    if (!buffer.empty() && std::fwrite(buffer.data(), 1, buffer.size(), file.get()) != buffer.size()) {
      return errno != 0 ? errno : EIO;
    }
    buffer.clear();
    buffered_lines = 0;
    if (std::fflush(file.get()) != 0) {
      return errno != 0 ? errno : EIO;
    }
    return 0;
  }

  void drain_or_throw() {
    if (const int error = drain(); error != 0) {
      throw EnvironmentError(
          fmt::format("'{}': writing the memstress trace failed: {}", path.string(), errno_text(error)));
    }
  }
};

TraceWriter::TraceWriter(const std::filesystem::path& path, std::string device, std::size_t flush_lines)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.path = path;
  s.device = std::move(device);
  s.flush_lines = flush_lines == 0 ? 1 : flush_lines;
  errno = 0;
  s.file.reset(std::fopen(path.c_str(), "wb"));
  if (!s.file) {
    throw InputError(fmt::format("'{}': cannot open the trace for writing: {}", path.string(),
                                 errno_text(errno != 0 ? errno : EIO)));
  }
  s.buffer = fmt::format("{}\n{}\n", kTraceMagic, kTraceColumns);
  if (const int error = s.drain(); error != 0) {
    throw InputError(
        fmt::format("'{}': cannot write the trace header: {}", path.string(), errno_text(error)));
  }
}

TraceWriter::~TraceWriter() {
  if (!state_) {
    return;
  }
  const std::scoped_lock lock(state_->mutex);
  if (const int error = state_->drain(); error != 0) {
    std::fprintf(stderr, "memstress: warning: '%s': writing the last trace lines failed: %s\n",
                 state_->path.c_str(), errno_text(error).c_str());
  }
}

TraceWriter::TraceWriter(TraceWriter&& other) noexcept = default;

TraceWriter& TraceWriter::operator=(TraceWriter&& other) noexcept {
  if (this != &other) {
    TraceWriter old(std::move(*this));  // flushes and closes what this writer had
    state_ = std::move(other.state_);
  }
  return *this;
}

std::uint64_t TraceWriter::write(TraceAction action, std::optional<std::uint64_t> id, std::uint64_t bytes,
                                 std::uint64_t stream) {
  if (!state_) {
    throw std::logic_error("TraceWriter::write on a moved-from writer");
  }
  State& s = *state_;
  const std::scoped_lock lock(s.mutex);
  const auto elapsed = std::chrono::steady_clock::now() - s.start;
  const auto time_ns =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  const std::uint64_t seq = s.next_seq++;
  auto out = std::back_inserter(s.buffer);
  if (id.has_value()) {
    fmt::format_to(out, "{},{},{},{},{},{},{}\n", seq, time_ns, to_string(action), *id, bytes, stream,
                   s.device);
  } else {
    fmt::format_to(out, "{},{},{},,{},{},{}\n", seq, time_ns, to_string(action), bytes, stream, s.device);
  }
  if (++s.buffered_lines >= s.flush_lines || action == TraceAction::oom) {
    s.drain_or_throw();
  }
  return seq;
}

void TraceWriter::flush() {
  if (!state_) {
    return;
  }
  const std::scoped_lock lock(state_->mutex);
  state_->drain_or_throw();
}

const std::filesystem::path& TraceWriter::path() const noexcept {
  return state_->path;
}

std::uint64_t TraceWriter::events_written() const {
  const std::scoped_lock lock(state_->mutex);
  return state_->next_seq;
}

}  // namespace memstress
