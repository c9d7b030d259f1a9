#include "harness/core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

// Closes a POSIX descriptor on scope exit.
class Descriptor {
 public:
  explicit Descriptor(int fd) noexcept : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor(Descriptor&&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           std::string_view what) {
  const auto fail = [&](std::string_view step) {
    throw InputError(fmt::format("{} {}: cannot {}: {}", what, path.string(), step, std::strerror(errno)));
  };
  const std::filesystem::path tmp = path.string() + fmt::format(".tmp.{}", ::getpid());
  Descriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    fail("create a temporary file");
  }
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      ::unlink(tmp.c_str());
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::close(fd.release()) != 0) {
    ::unlink(tmp.c_str());
    fail("flush");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    fail("rename the temporary file into place");
  }
}

}  // namespace memstress
