#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace memstress {

// Sizes as users already write them (nccl-tests' -b/-e/-f): a number with an optional suffix.
// K, M, G, T and KiB, MiB, GiB, TiB are powers of 1024 (nccl-tests' meaning); KB, MB, GB, TB are powers
// of 1000; B or nothing is bytes. Fractions are allowed where the result is whole ("1.5G").
// Throws InputError naming `what` (the flag or parameter) on anything else.
std::uint64_t parse_bytes(std::string_view text, std::string_view what);

// Formats with binary suffixes, exact where it can ("64M", "1G", "1536K", "100B"), otherwise with two
// decimals ("1.50G" is never produced for an exact 1536M). Round-trips through parse_bytes when exact.
std::string format_bytes(std::uint64_t bytes);

// The size as parse_bytes reads it back exactly: format_bytes's form where that is exact ("64M", "1536K",
// "100B"), else the number of bytes ("1610612737", which format_bytes rounds to "1.50G"). Canonical forms of
// sizes (`-p bytes=...`, -b/-e/-f) are written this way, so a case runs the size it was asked for.
std::string exact_bytes(std::uint64_t bytes);

// PyTorch's human form, for messages: "512 bytes", "1.50 KiB", "20.00 MiB", "79.19 GiB".
std::string human_bytes(std::uint64_t bytes);

// Geometric (factor > 1) or arithmetic (increment > 0) size sweep from begin to end inclusive, as
// nccl-tests' -b/-e/-f/-i. Exactly one of factor/increment is used: increment wins when non-zero. A sweep of
// more than `max_sizes` sizes (`memstress run --max-cases`) throws InputError before it is listed: `-b 1
// -e 16E -i 1` is 2^64 sizes.
std::vector<std::uint64_t> size_sweep(std::uint64_t begin, std::uint64_t end, double factor,
                                      std::uint64_t increment,
                                      std::size_t max_sizes = std::numeric_limits<std::size_t>::max());

// GB/s as the project defines it: 1e9 bytes per second.
constexpr double gb_per_s(double bytes, double seconds) noexcept {
  return bytes / seconds / 1e9;
}

}  // namespace memstress
