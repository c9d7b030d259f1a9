# The fleet store on PostgreSQL (label cpu), where this build has it (MEMSTRESS_HAVE_POSTGRESQL, libpq) and a
# server can be started here: the fixture `postgresql` starts a throwaway one listening on a Unix socket in
# /tmp/memstress-pg-<build>/ (tests/db/postgresql_server.sh) and stops it after the tests that need it.
# unit.db.postgresql runs the store's GoogleTest suites on it (their `postgresql` instances, MEMSTRESS_TEST_POSTGRESQL);
# tests/cli/fleet.cmake drives `memstress db` on it as users do. With MEMSTRESS_WITH_DB=ON (CI) a missing server
# is an error, so the PostgreSQL tests cannot silently vanish.
if(NOT MEMSTRESS_HAVE_POSTGRESQL)
  return()
endif()
file(GLOB _pg_bins LIST_DIRECTORIES true /usr/lib/postgresql/*/bin)
find_program(MEMSTRESS_PG_CTL pg_ctl HINTS ${_pg_bins})
if(NOT MEMSTRESS_PG_CTL)
  string(TOUPPER "${MEMSTRESS_WITH_DB}" _db_choice)
  if(_db_choice STREQUAL "ON")
    message(FATAL_ERROR "MEMSTRESS_WITH_DB=ON: the PostgreSQL tests need a server to start (pg_ctl, initdb; "
                        "Debian/Ubuntu: apt-get install postgresql)")
  endif()
  message(STATUS "memstress db: no PostgreSQL server here (pg_ctl), its PostgreSQL tests are not registered")
  return()
endif()

string(MD5 _pg_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_pg_hash}" 0 10 _pg_hash)
set(MEMSTRESS_PG_DIR /tmp/memstress-pg-${_pg_hash})
set(MEMSTRESS_PG_ADMIN "postgresql:///postgres?host=${MEMSTRESS_PG_DIR}&port=5432&user=postgres")
set(MEMSTRESS_PG_DB "postgresql:///memstress?host=${MEMSTRESS_PG_DIR}&port=5432&user=postgres")
set(_server ${CMAKE_CURRENT_SOURCE_DIR}/db/postgresql_server.sh)
add_test(NAME db.postgresql_start COMMAND ${_server} start ${MEMSTRESS_PG_DIR} 5432)
add_test(NAME db.postgresql_stop COMMAND ${_server} stop ${MEMSTRESS_PG_DIR} 5432)
set_tests_properties(db.postgresql_start PROPERTIES LABELS cpu FIXTURES_SETUP postgresql TIMEOUT 120)
set_tests_properties(db.postgresql_stop PROPERTIES LABELS cpu FIXTURES_CLEANUP postgresql TIMEOUT 120)
add_test(NAME unit.db.postgresql COMMAND memstress_db_tests --gtest_filter=*/postgresql --gtest_color=no)
set_tests_properties(
  unit.db.postgresql PROPERTIES LABELS cpu FIXTURES_REQUIRED postgresql FAIL_REGULAR_EXPRESSION "\\] 0 tests from" ENVIRONMENT
                                "MEMSTRESS_TEST_POSTGRESQL=${MEMSTRESS_PG_ADMIN}" TIMEOUT 300)
