#pragma once

// Note [Inputs that cannot hang or exhaust]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every file memstress reads whole as an input (results files for compare, accept --from and db ingest)
// is read by read_input_file, which promises to end quickly whatever the path names:
//
// - It is opened with O_NONBLOCK, so a FIFO without a writer (or a device that would wait) opens at once
//   instead of blocking forever, and the descriptor is checked with fstat, so what is checked is what is
//   read (no race with a rename in between).
// - Anything but a regular file (a FIFO, a character device like /dev/zero or /dev/urandom, a directory,
//   a socket) is refused, naming what it is.
// - A file larger than the caller's limit (docs/limits.md) is refused by its size before a byte is read,
//   a sparse file of 6 GB included, and no more than the limit is ever read (a file growing while it is
//   read is refused too, not read forever).
//
// The messages do not name the file: the caller, which knows its role ("BASE", "--from"), prefixes it.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace memstress {

// "a FIFO", "a character device", "a directory", ...: what a path is, for messages.
std::string_view file_type_name(std::filesystem::file_type type) noexcept;

// The whole of the regular file `path`, at most `max_bytes` of it (Note [Inputs that cannot hang or
// exhaust]). Throws InputError: "no such file", "a FIFO, not a regular file", "6.0 GiB, larger than the
// 256 MiB a results file may be (docs/limits.md)" (`what` names the kind of file), "cannot be read: ...".
std::string read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                            std::string_view what);

}  // namespace memstress
