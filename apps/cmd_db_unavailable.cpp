// memstress db in a build without the fleet store (MEMSTRESS_WITH_DB=OFF, or SQLite or libcrypto not
// found when configuring: cmake/FleetStore.cmake, which compiles this file instead of cmd_db.cpp). The
// subcommand is still there, so that `memstress db ...` says what is missing (exit 3) rather than
// calling `db` an unknown subcommand.

#include "apps/commands.hpp"
#include "harness/core/error.hpp"

namespace memstress::app {

Subcommand add_db(CLI::App& app) {
  CLI::App* sub =
      app.add_subcommand("db", "The fleet store (not in this build: needs libsqlite3-dev, libssl-dev)");
  sub->allow_extras();
  sub->prefix_command();  // whatever follows `db` is taken, and refused when run
  return {sub, []() -> int {
            throw EnvironmentError(
                "this memstress was built without the fleet store: install libsqlite3-dev and libssl-dev and "
                "rebuild");
          }};
}

}  // namespace memstress::app
