#include "harness/core/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "harness/core/error.hpp"
#include "harness/core/input_file.hpp"

namespace memstress {
namespace {

// The file a write to `path` replaces: `path` itself, or the file its symbolic links lead to.
std::filesystem::path resolve_target(const std::filesystem::path& path, std::string_view what) {
  if (path.empty()) {
    throw InputError(fmt::format("{}: an empty path; name a file", what));
  }
  std::error_code ec;
  const std::filesystem::file_status link = std::filesystem::symlink_status(path, ec);
  if (ec || link.type() == std::filesystem::file_type::not_found) {
    return path;
  }
  if (link.type() == std::filesystem::file_type::symlink) {
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (ec || st.type() == std::filesystem::file_type::not_found) {
      throw InputError(fmt::format("{} {}: a symbolic link to nothing; name a file", what, path.string()));
    }
    if (st.type() != std::filesystem::file_type::regular) {
      throw InputError(
          fmt::format("{} {}: leads to {}, not a regular file; memstress writes a results file "
                      "whole and renames it into place, and will not replace it",
                      what, path.string(), file_type_name(st.type())));
    }
    return std::filesystem::canonical(path);
  }
  if (link.type() != std::filesystem::file_type::regular) {
    throw InputError(
        fmt::format("{} {}: exists and is {}, not a regular file; memstress writes a file "
                    "whole and renames it into place, and will not replace it",
                    what, path.string(), file_type_name(link.type())));
  }
  return path;
}

// `path` as the file it will be: absolute, every symbolic link followed, a dangling one too (to the file a
// write through it would create), `.` and `..` resolved. At most 40 links deep, as the kernel allows.
std::filesystem::path followed(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  constexpr int kMaxLinks = 40;
  for (int hop = 0; hop < kMaxLinks; ++hop) {
    const std::filesystem::path parent = std::filesystem::weakly_canonical(p.parent_path(), ec);
    p = (ec ? p.parent_path() : parent) / p.filename();
    if (std::filesystem::symlink_status(p, ec).type() != std::filesystem::file_type::symlink) {
      break;
    }
    const std::filesystem::path to = std::filesystem::read_symlink(p, ec);
    if (ec) {
      break;
    }
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : canonical;
}

}  // namespace

void check_distinct_outputs(const std::vector<NamedOutput>& outputs) {
  // Each path as the file it will be (followed: dangling links too); hard links are caught by comparing
  // existing files themselves.
  std::vector<std::filesystem::path> resolved;
  resolved.reserve(outputs.size());
  for (const NamedOutput& o : outputs) {
    if (o.path.empty()) {
      resolved.emplace_back();  // not asked for (check_output_path refuses an empty one that was)
      continue;
    }
    resolved.push_back(followed(o.path));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = 0; j < i && !outputs[i].path.empty(); ++j) {
      if (outputs[j].path.empty()) {
        continue;
      }
      std::error_code ec;
      if (resolved[i] == resolved[j] || std::filesystem::equivalent(outputs[i].path, outputs[j].path, ec)) {
        throw InputError(fmt::format(
            "{} {} and {} {} are the same file ({}): each output needs a file of its own, or one would "
            "replace the other",
            outputs[j].flag, outputs[j].path.string(), outputs[i].flag, outputs[i].path.string(),
            resolved[i].string()));
      }
    }
  }
}

void check_output_path(const std::filesystem::path& path, std::string_view what) {
  const std::filesystem::path target = resolve_target(path, what);
  const std::filesystem::path dir = std::filesystem::absolute(target).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0) {
    throw InputError(fmt::format("{} {}: the directory {} does not exist or is not writable", what,
                                 path.string(), dir.string()));
  }
}

AtomicFileWriter::AtomicFileWriter(const std::filesystem::path& path, std::string_view what)
    : target_(resolve_target(path, what)), what_(what) {
  tmp_ = target_.string() + fmt::format(".tmp.{}", ::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) {
    fail("create a temporary file");
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::fail(std::string_view step) const {
  throw InputError(fmt::format("{} {}: cannot {}: {}", what_, target_.string(), step, std::strerror(errno)));
}

void AtomicFileWriter::write(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) {
    fail("flush");
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(tmp_.c_str());
    fail("flush");
  }
  // The target may have been replaced by something else during the run.
  try {
    static_cast<void>(resolve_target(target_, what_));
  } catch (const InputError&) {
    ::unlink(tmp_.c_str());
    throw;
  }
  if (::rename(tmp_.c_str(), target_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(tmp_.c_str());
    errno = saved;
    fail("rename the temporary file into place");
  }
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content,
                           std::string_view what) {
  AtomicFileWriter writer(path, what);
  writer.write(content);
  writer.commit();
}

}  // namespace memstress
