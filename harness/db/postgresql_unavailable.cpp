// A build without libpq (cmake/FleetStore.cmake): a `postgresql://` store (--db) says what to install.

#include <fmt/format.h>

#include "harness/db/postgresql.hpp"

namespace memstress::db {

std::unique_ptr<Connection> open_postgresql(const std::string& url, OpenMode /*mode*/,
                                            std::string_view what) {
  throw InputError(fmt::format(
      "{} '{}': this memstress was built without PostgreSQL's client library; install libpq-dev and "
      "rebuild (scripts/setup), or give the path of an SQLite file",
      what, masked_url(url)));
}

bool postgresql_built() noexcept {
  return false;
}

}  // namespace memstress::db
