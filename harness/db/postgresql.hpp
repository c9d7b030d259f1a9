#pragma once

// The PostgreSQL backend (postgresql_connection.cpp, on libpq), where the build has it
// (cmake/FleetStore.cmake); without libpq, postgresql_unavailable.cpp says so. open_database
// (connection.hpp) calls it for a `postgresql://` or `postgres://` URL.

#include <memory>
#include <string>
#include <string_view>

#include "harness/db/connection.hpp"

namespace memstress::db {

// Connects to the server and database the URL names (libpq's connection URI: user, password, host or
// socket directory, port, database, options). Throws InputError naming the URL, password masked.
// OpenMode::read_only: the session's transactions are read-only (default_transaction_read_only).
std::unique_ptr<Connection> open_postgresql(const std::string& url, OpenMode mode, std::string_view what);

// Whether this build has the PostgreSQL backend.
bool postgresql_built() noexcept;

// The SQL with each `?` outside quoted text as `$1`, `$2`, ... (PostgreSQL's parameters); `count` is set
// to how many.
std::string numbered_parameters(std::string_view sql, int& count);

// The URL with its password, if any (user:password@, or a password= parameter), as "***" (for messages).
std::string masked_url(const std::string& url);

}  // namespace memstress::db
