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

// A whole number from 0 to 2^64 - 1 written in decimal digits (no sign, fraction or exponent: a value that
// does not fit is an error, never silently another, as a seed must be). Throws InputError naming `what`.
std::uint64_t parse_whole_number(std::string_view text, std::string_view what);

// Formats with binary suffixes, exact where it can ("64M", "1G", "1536K", "100B"), otherwise with two
// decimals ("1.50G" is never produced for an exact 1536M). Round-trips through parse_bytes when exact.
// For messages; where the value must survive, use exact_bytes.
std::string format_bytes(std::uint64_t bytes);

// Always exact: the largest binary suffix that divides the value ("64M", "1536K", "1050000B"), so that
// parse_bytes(exact_bytes(v)) == v for every v. The canonical form of a size parameter.
std::string exact_bytes(std::uint64_t bytes);

// PyTorch's human form, for messages: "512 bytes", "1.50 KiB", "20.00 MiB", "79.19 GiB".
std::string human_bytes(std::uint64_t bytes);

// Geometric (factor > 1) or arithmetic (increment > 0) size sweep from begin to end inclusive, as
// nccl-tests' -b/-e/-f/-i. Exactly one of factor/increment is used: increment wins when non-zero.
// A geometric step is size x factor rounded down to a whole byte (as nccl-tests truncates; a product
// within a billionth of a whole number counts as that number), and at least one byte larger than the step
// before, so the sizes strictly increase (-b 1000 -e 1400 -f 1.1: 1000, 1100, 1210, 1331; -b 1 -f 1.5:
// 1, 2, 3, 4, 6, 9).
// Throws InputError naming (as `names` does) the first size for a first size of 0, the end for an end below
// the beginning, or the factor where it is not a finite number greater than 1; and the sweep and its limit
// for a sweep of more than `max_sizes` sizes (`memstress run --max-cases`) before it is listed (`-b 1 -e 16E
// -i 1` is 2^64 sizes).
struct SizeSweepNames {  // the inputs as the caller (a command's flags) names them
  std::string_view begin{};
  std::string_view end{};
  std::string_view factor{};
  std::string_view sweep{};  // the three together
  std::string_view limit{};  // what gave max_sizes
};
std::vector<std::uint64_t> size_sweep(std::uint64_t begin, std::uint64_t end, double factor,
                                      std::uint64_t increment, const SizeSweepNames& names,
                                      std::size_t max_sizes = std::numeric_limits<std::size_t>::max());

// GB/s as the project defines it: 1e9 bytes per second.
constexpr double gb_per_s(double bytes, double seconds) noexcept {
  return bytes / seconds / 1e9;
}

}  // namespace memstress
