#pragma once

// The SQL text that differs between database backends, all of it in one place: the schema
// (schema.cpp) and the store (store.cpp) write every other statement in the SQL both SQLite and
// PostgreSQL accept (INSERT ... RETURNING, ON CONFLICT DO NOTHING, positional `?` parameters, which a
// PostgreSQL connection rewrites as `$n`).

#include <string_view>

namespace memstress::db {

struct Dialect {
  std::string_view name;       // "sqlite", "postgresql"
  std::string_view id_column;  // a generated integer primary key
  std::string_view real_type;  // a double
  std::string_view int_type;   // a 64-bit integer
  std::string_view has_table;  // counts the tables named by its one parameter (the catalogues differ)
  // Starts a writing transaction (every Transaction writes; queries read outside one). SQLite's BEGIN
  // IMMEDIATE takes the write lock at once, waiting the busy timeout for another writer: a plain (deferred)
  // BEGIN that reads first and writes later cannot wait when it upgrades, since another writer may have
  // committed since its read, and fails with "database is locked" at once.
  std::string_view begin_write;
  // Run first in a writing transaction so that two processes writing one store take turns: "" where the
  // database does so itself (SQLite, from BEGIN IMMEDIATE on). PostgreSQL's transactions would both read
  // "not held yet" and then collide on a unique key, ending one ingest.
  std::string_view writer_lock;
};

inline constexpr Dialect kSqlite{"sqlite",
                                 "INTEGER PRIMARY KEY",
                                 "REAL",
                                 "INTEGER",
                                 "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
                                 "BEGIN IMMEDIATE",
                                 ""};
inline constexpr Dialect kPostgresql{
    "postgresql",
    "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "DOUBLE PRECISION",
    "BIGINT",
    "SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
    "BEGIN",
    "SELECT pg_advisory_xact_lock(726573747265)"};  // "memstress" as a number

}  // namespace memstress::db
