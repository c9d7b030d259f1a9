#include "harness/core/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress {
namespace {

// The descriptor of an open input, closed however the read ends.
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

 private:
  int fd_;
};

std::filesystem::file_type type_of(mode_t mode) noexcept {
  using std::filesystem::file_type;
  if (S_ISREG(mode)) {
    return file_type::regular;
  }
  if (S_ISDIR(mode)) {
    return file_type::directory;
  }
  if (S_ISCHR(mode)) {
    return file_type::character;
  }
  if (S_ISBLK(mode)) {
    return file_type::block;
  }
  if (S_ISFIFO(mode)) {
    return file_type::fifo;
  }
  return S_ISSOCK(mode) ? file_type::socket : file_type::unknown;
}

[[noreturn]] void unreadable(int error) {
  throw InputError(fmt::format("cannot be read: {}", std::strerror(error)));
}

}  // namespace

std::string_view file_type_name(std::filesystem::file_type type) noexcept {
  switch (type) {
    case std::filesystem::file_type::regular:
      return "a regular file";
    case std::filesystem::file_type::directory:
      return "a directory";
    case std::filesystem::file_type::character:
      return "a character device";
    case std::filesystem::file_type::block:
      return "a block device";
    case std::filesystem::file_type::fifo:
      return "a FIFO";
    case std::filesystem::file_type::socket:
      return "a socket";
    case std::filesystem::file_type::symlink:
      return "a symbolic link";
    case std::filesystem::file_type::not_found:
      return "nothing (no such file)";
    default:
      return "not a regular file";
  }
}

std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                            std::string_view what) {
  const Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENOENT) {
      throw InputError("no such file");
    }
    unreadable(errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    unreadable(errno);
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError(fmt::format("{}, not a regular file; {} is read from a regular file only",
                                 file_type_name(type_of(st.st_mode)), what));
  }
  const auto size = static_cast<std::uint64_t>(std::max<off_t>(st.st_size, 0));
  if (size > max_bytes) {
    throw InputError(fmt::format("{}, larger than the {} {} may be (docs/limits.md)", human_bytes(size),
                                 human_bytes(max_bytes), what));
  }
  // Regular files never block: reads wait for the disk as usual.
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  // Room for the whole file and the read that finds its end: growing a string past its capacity copies it
  // into one twice as large, and the file would be held twice for a moment.
  constexpr std::size_t kBlock = 1 << 16;
  std::string text;
  text.reserve(static_cast<std::size_t>(size) + kBlock);
  for (;;) {
    const std::size_t at = text.size();
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, max_bytes + 1 - at));
    text.resize(at + want);
    const ssize_t n = ::read(fd.get(), text.data() + at, want);
    if (n < 0) {
      if (errno == EINTR) {
        text.resize(at);
        continue;
      }
      unreadable(errno);
    }
    text.resize(at + static_cast<std::size_t>(n));
    if (n == 0) {
      break;
    }
    if (text.size() > max_bytes) {
      throw InputError(fmt::format("grew past the {} {} may be while it was read (docs/limits.md)",
                                   human_bytes(max_bytes), what));
    }
  }
  return text;
}

}  // namespace memstress
