#pragma once

#include <string>
#include <string_view>

namespace memstress::db {

// SHA-256 of `data` as 64 lowercase hex digits, computed by OpenSSL's libcrypto: the content key of a
// results file in the fleet store, where a file ingested twice must be recognized whatever its name.
// Throws EnvironmentError (exit 3) when libcrypto cannot compute it (a provider configuration without
// SHA-256).
std::string sha256_hex(std::string_view data);

}  // namespace memstress::db
