# The fleet store (harness/db, `memstress db`) is optional. The GPU machines users build on may lack the
# SQLite and OpenSSL headers and have no package index to install them from, and the first `scripts/run`
# there must still build: everything but `memstress db` works without them.
#
# MEMSTRESS_WITH_DB: AUTO (default) builds the store when both are found and warns when not; ON requires
# them (CI: scripts/lib.sh passes it, so the store's tests cannot silently vanish); OFF never builds it.
# Sets MEMSTRESS_HAVE_DB (also in the cache, where tests/scripts/test_readme.py reads it): whether it is
# built. Without it, apps/cmd_db_unavailable.cpp's `memstress db` says why and exits 3.
#
# PostgreSQL (`--db postgresql://...`) needs libpq (Debian/Ubuntu: libpq-dev) besides: with the store ON it is
# required too (CI tests both backends); with AUTO it is built where found, and without it a postgresql:// URL
# says what to install (MEMSTRESS_HAVE_POSTGRESQL).
string(TOUPPER "${MEMSTRESS_WITH_DB}" _db_choice)
if(NOT _db_choice MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MEMSTRESS_WITH_DB='${MEMSTRESS_WITH_DB}': expected AUTO, ON or OFF")
endif()

set(MEMSTRESS_HAVE_DB OFF)
if(_db_choice STREQUAL "OFF")
  message(STATUS "memstress db (the fleet store) is not built: MEMSTRESS_WITH_DB=OFF")
else()
  find_package(SQLite3 3.35) # 3.35 for INSERT ... RETURNING
  find_package(OpenSSL 1.1 COMPONENTS Crypto) # SHA-256 of the files ingested (harness/db/sha256.cpp)
  set(_db_missing "")
  if(NOT SQLite3_FOUND)
    list(APPEND _db_missing "SQLite 3.35 or newer (Debian/Ubuntu: libsqlite3-dev)")
  endif()
  if(NOT OpenSSL_FOUND)
    list(APPEND _db_missing "OpenSSL's libcrypto (Debian/Ubuntu: libssl-dev)")
  endif()
  find_package(PostgreSQL) # libpq: the PostgreSQL backend (harness/db/postgresql_connection.cpp)
  if(NOT PostgreSQL_FOUND AND _db_choice STREQUAL "ON")
    list(APPEND _db_missing "PostgreSQL's libpq (Debian/Ubuntu: libpq-dev)")
  endif()
  list(JOIN _db_missing " and " _db_missing)
  if(NOT _db_missing)
    set(MEMSTRESS_HAVE_DB ON)
    message(STATUS "memstress db (the fleet store): built, on SQLite ${SQLite3_VERSION}")
  elseif(_db_choice STREQUAL "ON")
    message(FATAL_ERROR "MEMSTRESS_WITH_DB=ON, but ${_db_missing} not found: install it, or configure with "
                        "-DMEMSTRESS_WITH_DB=AUTO to build without `memstress db`")
  else()
    message(WARNING "memstress db (the fleet store) is not built: ${_db_missing} not found. Everything else "
                    "is. Install libsqlite3-dev and libssl-dev and reconfigure to get it, or configure with "
                    "-DMEMSTRESS_WITH_DB=OFF to say you do not want it.")
  endif()
endif()
set(MEMSTRESS_HAVE_POSTGRESQL OFF)
if(MEMSTRESS_HAVE_DB AND PostgreSQL_FOUND)
  set(MEMSTRESS_HAVE_POSTGRESQL ON)
  message(STATUS "memstress db: PostgreSQL too, on libpq ${PostgreSQL_VERSION_STRING}")
elseif(MEMSTRESS_HAVE_DB)
  message(WARNING "memstress db is built without PostgreSQL (libpq not found; Debian/Ubuntu: libpq-dev): "
                  "SQLite files only")
endif()
set(MEMSTRESS_HAVE_POSTGRESQL
    ${MEMSTRESS_HAVE_POSTGRESQL}
    CACHE INTERNAL "Whether memstress db has the PostgreSQL backend (libpq)")
set(MEMSTRESS_HAVE_DB
    ${MEMSTRESS_HAVE_DB}
    CACHE INTERNAL "Whether the fleet store (memstress db) is built (cmake/FleetStore.cmake)")
