#pragma once

// The fleet store's schema, versioned: `schema_version` holds the version a database is at, and
// migrate() applies the migrations past it, in order, each in its own transaction with its version
// row (a migration that fails leaves the database at the version before it). A database written by a
// newer memstress (a version this one does not know) is refused, never written.
//
// Note [Schema versions]
// ~~~~~~~~~~~~~~~~~~~~~~
// The version is read from a file anyone may have written, so it is read as what it could be, not as what
// memstress writes: each row as text, parsed whole as a 64-bit number. A version past this memstress's
// (2^31, 2^32 + 1, 999999999999 alike) is a newer memstress's store and refused; a row that is not a whole
// number from 1 up (0, -1, 1.5, 'x', NULL) is no memstress's, and refused naming the store. Never narrowed
// to int before that check: a version of 2^31 read as an int was negative, and indexed the migrations below
// their start.

#include <cstdint>

#include "harness/db/connection.hpp"

namespace memstress::db {

// The version this memstress writes: the number of migrations it knows.
int latest_schema_version() noexcept;

// The database's version, 0 for an empty one (no schema_version table, or an empty one). Throws DbError
// naming the database where a row is not a schema version (Note [Schema versions]).
std::int64_t schema_version(Connection& connection);

// Throws DbError naming the database when `version` is past latest_schema_version() (a newer memstress's).
void check_not_newer(Connection& connection, std::int64_t version);

// For queries, which never write (Note [Reading a store]): throws DbError naming the database unless it is at
// latest_schema_version() (an empty database is no store; an older one is upgraded by an ingest).
void check_current(Connection& connection);

// Brings the database to latest_schema_version() (or to `up_to`, below it: a store as an older memstress
// made it, for tests of the upgrade); returns how many migrations ran.
int migrate(Connection& connection);
int migrate(Connection& connection, std::int64_t up_to);

}  // namespace memstress::db
