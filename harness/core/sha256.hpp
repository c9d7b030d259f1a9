#pragma once

#include <string>
#include <string_view>

namespace memstress {

// SHA-256 (FIPS 180-4) of `data` as 64 lowercase hex digits: the content key of a results file in the
// fleet store (harness/db), where a file ingested twice must be recognized whatever its name.
std::string sha256_hex(std::string_view data);

}  // namespace memstress
