#pragma once

// The fleet store's schema, versioned: `schema_version` holds the version a database is at, and
// migrate() applies the migrations past it, in order, each in its own transaction with its version
// row (a migration that fails leaves the database at the version before it). A database written by a
// newer memstress (a version this one does not know) is refused, never written.

#include "harness/db/connection.hpp"

namespace memstress::db {

// The version this memstress writes: the number of migrations it knows.
int latest_schema_version() noexcept;

// The database's version, 0 for an empty one (no schema_version table).
int schema_version(Connection& connection);

// Brings the database to latest_schema_version(); returns how many migrations ran.
int migrate(Connection& connection);

}  // namespace memstress::db
