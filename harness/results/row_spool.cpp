#include "harness/results/row_spool.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

void write_all(int fd, std::string_view bytes, const std::string& name) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw Error(ExitCode::check_failed,
                  fmt::format("cannot write the results stream {}: {}", name, std::strerror(errno)));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void each_row_line(std::string_view line, const std::function<void(nlohmann::json&&)>& each) {
  if (line.empty()) {
    return;
  }
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.value("type", std::string()) == "row") {
    j.erase("type");
    each(std::move(j));
  }
}

}  // namespace

RowSpool RowSpool::for_output(const std::filesystem::path& jsonl, const std::filesystem::path& out,
                              std::string_view what) {
  // Not O_TRUNC: a second run must not empty the stream of the first before it learns it is taken.
  const int fd = ::open(jsonl.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    throw InputError(fmt::format("{} {}: cannot write the results stream {}: {}", what, out.string(),
                                 jsonl.string(), std::strerror(errno)));
  }
  RowSpool spool(fd, jsonl.string());
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int saved = errno;
    throw InputError(
        saved == EWOULDBLOCK
            ? fmt::format("{} {}: another memstress run is writing {} now; give this run another {}, "
                          "or wait for that one to end",
                          what, out.string(), jsonl.string(), what)
            : fmt::format("{} {}: cannot lock the results stream {}: {}", what, out.string(), jsonl.string(),
                          std::strerror(saved)));
  }
  if (::ftruncate(fd, 0) != 0) {
    throw InputError(fmt::format("{} {}: cannot empty the results stream {}: {}", what, out.string(),
                                 jsonl.string(), std::strerror(errno)));
  }
  return spool;
}

RowSpool RowSpool::anonymous() {
  const char* env = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): read before any thread
  std::string pattern =
      fmt::format("{}/memstress-rows.XXXXXX", env != nullptr && *env != '\0' ? env : "/tmp");
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) {
    return {-1, "the rows held in memory"};
  }
  ::unlink(pattern.c_str());  // gone with the process, whatever ends it
  return {fd, "a temporary file"};
}

RowSpool::RowSpool(RowSpool&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), name_(std::move(other.name_)), lines_(std::move(other.lines_)) {}

RowSpool::~RowSpool() {
  if (fd_ >= 0) {
    ::close(fd_);  // releases the lock
  }
}

void RowSpool::append(std::string_view line) {
  if (fd_ < 0) {
    lines_.emplace_back(line);
    return;
  }
  std::string text(line);
  text += '\n';
  write_all(fd_, text, name_);  // O_RDWR without O_APPEND: the offset only moves forward here
}

void RowSpool::for_each_row(const std::function<void(nlohmann::json&&)>& each) const {
  if (fd_ < 0) {
    for (const std::string& line : lines_) {
      each_row_line(line, each);
    }
    return;
  }
  std::array<char, 1 << 16> buffer{};
  std::string line;
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd_, buffer.data(), buffer.size(), offset);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw Error(ExitCode::check_failed,
                  fmt::format("cannot read back the results stream {}: {}", name_, std::strerror(errno)));
    }
    if (n == 0) {
      break;
    }
    offset += n;
    for (std::string_view chunk(buffer.data(), static_cast<std::size_t>(n)); !chunk.empty();) {
      const std::size_t end = chunk.find('\n');
      line.append(chunk.substr(0, end));
      if (end == std::string_view::npos) {
        break;
      }
      each_row_line(line, each);
      line.clear();
      chunk.remove_prefix(end + 1);
    }
  }
  each_row_line(line, each);
}

}  // namespace memstress
