#pragma once

// Numbers with units, for people: what the run table prints (the JSON keeps the raw numbers).
//
// Note [One unit style per metric]. A metric is recorded in one unit ("bytes", "MiB", "us", "s", "GB/s",
// "ops/s", "ratio", "share", "count", ...) and the table prints it scaled to the unit family's human form,
// always with the same rule: at most 4 significant digits, never an exponent, trailing zeros dropped.
//   bytes, KiB, MiB, GiB (and "bytes/epoch"): binary units, B to TiB  -> "78.09 GiB", "13.36 MiB/epoch"
//   s, ms, us, ns: the largest unit in which the value is at least 1  -> "12.3 us", "1.52 s"
//   GB/s: always GB/s (1e9 bytes/s), as nccl-tests and nvbandwidth     -> "3185 GB/s", "54.93 GB/s"
//   any other "X/s": decimal prefixes k, M, G                          -> "4.252M ops/s"
//   share, share of total (fractions of 1): percent                    -> "12.5%"
//   count, ratio: the number alone                                     -> "37", "0.9512"
//   anything else: the number and the unit                             -> "1.5 x operands"
// The spread of a metric (p10, p90) is printed in the scale its median chose, so a row reads in one unit.

#include <string>
#include <string_view>

namespace memstress {

// How to print values of `unit` near `magnitude`: divide by `divisor` and append `unit`, after a space
// unless `glued` ("12.5%", "4.252M ops/s"); nothing when it is empty.
struct DisplayScale {
  double divisor = 1;
  std::string unit;
  bool glued = false;
};

DisplayScale display_scale(double magnitude, std::string_view unit);

// At most 4 significant digits (all the digits of a whole number of 5 or more), never an exponent,
// trailing zeros dropped: 3185.2 -> "3185", 54.934 -> "54.93", 0.012345 -> "0.01235", 123456 -> "123456",
// 1.0 -> "1". NaN and infinities as "nan", "inf", "-inf".
std::string format_number(double value);

// `value` divided by the scale's divisor, formatted, with the scale's unit: "78.09 GiB", "12.5%", "37".
std::string format_scaled(double value, const DisplayScale& scale);

// format_scaled(value, display_scale(value, unit)).
std::string format_quantity(double value, std::string_view unit);

}  // namespace memstress
