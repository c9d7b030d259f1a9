#pragma once

// What the fleet store refuses in a results file that the results loader accepts (ingest.cpp calls it
// before storing), so that what goes in comes back out whole, on SQLite and PostgreSQL alike:
//
// - a text field holding a NUL byte: PostgreSQL cannot store one (libpq passes text as C strings, so it
//   kept the field cut at the NUL) while SQLite kept it whole; refused on both, naming the field;
// - a text field longer than kMaxTextFieldBytes (docs/limits.md): a GPU name of 64 MiB was written on every
//   line of an export (2.95 GB); refused naming the field and its length;
// - a started_at that is no time (2026-13-45, 2026-02-31): queries select runs by it (--since).
//
// Each refusal is an InputError whose message names the field as the file does ("row 3: field device.name:
// ..."); ingest prefixes the file.

#include <cstddef>

#include "harness/results/read.hpp"

namespace memstress::db {

inline constexpr std::size_t kMaxTextFieldBytes = 16 * 1024;

// Throws InputError naming the first field the store refuses.
void check_storable(const Results& results);

}  // namespace memstress::db
