# memstress db: the fleet store (harness/db) as users drive it, label cpu. Fixtures: tests/data/fleet/ (six
# H100s on six nodes, node04's H2D planted 8% slow; make_fleet.py) and every real result under results/.
set(_fleet ${PROJECT_SOURCE_DIR}/tests/data/fleet)
set(_fleet_db ${CMAKE_CURRENT_BINARY_DIR}/fleet.sqlite)
set(_nodes ${_fleet}/node01.json ${_fleet}/node02.json ${_fleet}/node03.json ${_fleet}/node04.json
           ${_fleet}/node05.json ${_fleet}/node06.json)

add_test(NAME cli.db_fresh COMMAND ${CMAKE_COMMAND} -E rm -f ${_fleet_db} ${_fleet_db}-wal ${_fleet_db}-shm)
set_tests_properties(cli.db_fresh PROPERTIES LABELS cpu FIXTURES_SETUP fleet_db_fresh)
# A bad file among good ones: named, skipped, the rest kept, exit 2.
memstress_cli_test(
  db_ingest_fleet
  --match "skipped '[^']*truncated.json': "
  --stdout-match "^added '[^']*node04.json': memstress.run/1 document, 4 rows, 1 GPUs"
  --stdout-match "7 file\\(s\\): 6 added, 0 replaced, 0 unchanged, 1 skipped.* holds 6 run\\(s\\), 24 row\\(s\\)"
  2
  --
  ${_ms}
  db
  ingest
  -v
  ${_nodes}
  ${_fleet}/truncated.json
  --db
  ${_fleet_db})
set_tests_properties(cli.db_ingest_fleet PROPERTIES FIXTURES_REQUIRED fleet_db_fresh FIXTURES_SETUP fleet_db)
# Again: nothing changes, and it says so.
memstress_cli_test(db_ingest_again --stdout-match "^unchanged '[^']*node01.json'"
                   --stdout-match "6 file\\(s\\): 0 added, 0 replaced, 6 unchanged, 0 skipped.* 24 row\\(s\\)" 0 --
                   ${_ms} db ingest -v ${_nodes} --db ${_fleet_db})
set_tests_properties(cli.db_ingest_again PROPERTIES FIXTURES_REQUIRED fleet_db DEPENDS cli.db_ingest_fleet)
# The planted GPU, and only it, on each of its H2D metrics (memstress's and the reference loop's, 64 and 256 MiB).
memstress_cli_test(
  db_outliers
  --stdout-match "direction=h2d .*node04 +GPU-00000000-0000-0000-0000-000000000004 +0000:04:00.0"
  --stdout-match "^4 outlier\\(s\\) among 6 GPU\\(s\\)"
  1
  --
  ${_ms}
  db
  outliers
  --db
  ${_fleet_db})
memstress_cli_test(db_outliers_json --json-stdout --stdout-match "\"gpu_uuid\": \"GPU-00000000-0000-0000-0000-000000000004\""
                   1 -- ${_ms} db outliers --db ${_fleet_db} --format json)
memstress_cli_test(db_outliers_metric --stdout-match "^2 outlier\\(s\\)" 1 -- ${_ms} db outliers --db ${_fleet_db}
                   --metric GB/s)
memstress_cli_test(db_outliers_none_since --stdout-match "^0 outlier\\(s\\) among 0 GPU\\(s\\)" 0 -- ${_ms} db outliers
                   --db ${_fleet_db} --since 2100-01-01)
memstress_cli_test(db_outliers_min_gpus --stdout-match "^0 outlier\\(s\\) among 6 GPU\\(s\\): 0 group" 0 -- ${_ms} db
                   outliers --db ${_fleet_db} --min-gpus 7)
set_tests_properties(cli.db_outliers cli.db_outliers_json cli.db_outliers_metric cli.db_outliers_none_since
                     cli.db_outliers_min_gpus PROPERTIES FIXTURES_REQUIRED fleet_db)
memstress_cli_test(db_outliers_bad_since --match "--since 'yesterday'" 2 -- ${_ms} db outliers --db ${_fleet_db}
                   --since yesterday)
memstress_cli_test(db_outliers_no_db --match "--db '/nonexistent/fleet.sqlite': no such database" 2 -- ${_ms} db
                   outliers --db /nonexistent/fleet.sqlite)
memstress_cli_test(db_not_a_database --match "not an SQLite database" 2 -- ${_ms} db outliers --db
                   ${_fleet}/make_fleet.py)
# A PostgreSQL URL that cannot be reached: named, its password masked, exit 2 (or, in a build without libpq, what
# to install).
memstress_cli_test(db_postgresql_unreachable --match "--db 'postgresql://fleet:[*][*][*]@/x[?]host=/nonexistent': (cannot connect|this memstress was built without PostgreSQL)"
                   2 -- ${_ms} db ingest ${_fleet}/node01.json --db postgresql://fleet:secret@/x?host=/nonexistent)
memstress_cli_test(db_no_subcommand --match "subcommand" 2 -- ${_ms} db)

# Every committed real result: ingested, or skipped with a reason where it is not a results file. In the cpu pass
# only: under ThreadSanitizer the whole of results/, xz-compressed, took past its 300 s; the sanitizers run the
# store's ingest in its unit tests and the smaller cli.db_* tests.
add_test(NAME cli.db_real_results COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/db_real_results.py ${_ms} ${PROJECT_SOURCE_DIR}
                                          ${CMAKE_CURRENT_BINARY_DIR}/db-real)
set_tests_properties(cli.db_real_results PROPERTIES LABELS "cpu;not-in-sanitizers" TIMEOUT 300)

# History and two drivers: the same six GPUs a week earlier under 570.195.03 (make_fleet.py: H2D at 64 MiB 10%
# faster there), in a store of their own.
set(_history_db ${CMAKE_CURRENT_BINARY_DIR}/fleet-history.sqlite)
set(_old_nodes ${_fleet}/driver-570/node01.json ${_fleet}/driver-570/node02.json ${_fleet}/driver-570/node03.json
               ${_fleet}/driver-570/node04.json ${_fleet}/driver-570/node05.json ${_fleet}/driver-570/node06.json)
add_test(NAME cli.db_history_fresh COMMAND ${CMAKE_COMMAND} -E rm -f ${_history_db} ${_history_db}-wal
                                                ${_history_db}-shm)
set_tests_properties(cli.db_history_fresh PROPERTIES LABELS cpu FIXTURES_SETUP fleet_history_fresh)
memstress_cli_test(db_ingest_two_drivers --stdout-match "12 file\\(s\\): 12 added.* holds 12 run\\(s\\), 48 row\\(s\\)" 0
                   -- ${_ms} db ingest ${_old_nodes} ${_nodes} --db ${_history_db})
set_tests_properties(cli.db_ingest_two_drivers PROPERTIES FIXTURES_REQUIRED fleet_history_fresh FIXTURES_SETUP
                                                          fleet_history)
# One GPU's H2D over time: the driver change marked, and the drop it brought.
memstress_cli_test(
  db_history_gpu
  --stdout-match "^transfers direction=h2d .*bytes=64M \\| caching \\| GB/s \\| NVIDIA H100 80GB HBM3 \\(GPU-00000000-0000-0000-0000-000000000004, host node04\\)"
  --stdout-match "^2026-11-2.*580.159.04 +[0-9.]+ GB/s +-(8|9)\\.[0-9]% +<- driver 570.195.03 -> 580.159.04"
  --stdout-match "^4 series on 1 GPU\\(s\\), 4 driver change\\(s\\) marked"
  0
  --
  ${_ms}
  db
  history
  --db
  ${_history_db}
  --gpu
  GPU-00000000-0000-0000-0000-000000000004
  --metric
  GB/s)
memstress_cli_test(db_history_host_json --json-stdout --stdout-match "\"driver_changed_from\": \"570.195.03\"" 0 --
                   ${_ms} db history --db ${_history_db} --host node02 --format json)
memstress_cli_test(db_history_unknown_gpu --match "--db '[^']*': no measurement of GPU 'GPU-nosuch'" 2 -- ${_ms} db
                   history --db ${_history_db} --gpu GPU-nosuch)
memstress_cli_test(db_history_neither --match "give one of --gpu UUID or --host H" 2 -- ${_ms} db history --db
                   ${_history_db})
# 570 -> 580 over the six GPUs that ran under both: H2D at 64 MiB WORSE (memstress's loop and the reference
# loop), nothing else; exit 1 as compare does.
memstress_cli_test(
  db_compare_drivers
  --stdout-match "^WORSE +transfers +direction=h2d .*bytes=64M +caching +GB/s +NVIDIA H100 80GB HBM3 +1 +6 +[0-9.]+ GB/s +[0-9.]+ GB/s "
  --stdout-match "^driver 570.195.03 -> 580.159.04: 6 GPU\\(s\\) ran under both. [0-9]+ measurement\\(s\\): 2 WORSE, 0 BETTER"
  1
  --
  ${_ms}
  db
  compare
  --db
  ${_history_db}
  --driver
  570.195.03
  --driver
  580.159.04)
memstress_cli_test(db_compare_drivers_json --json-stdout --stdout-match "\"worse\": 1" 1 -- ${_ms} db compare --db
                   ${_history_db} --driver 570.195.03 --driver 580.159.04 --metric GB/s --format json)
memstress_cli_test(db_compare_same_driver --match "give two different drivers" 2 -- ${_ms} db compare --db
                   ${_history_db} --driver 580.159.04 --driver 580.159.04)
memstress_cli_test(db_compare_bad_threshold --match "--threshold" 2 -- ${_ms} db compare --db ${_history_db} --driver
                   570.195.03 --driver 580.159.04 --threshold x)
# OpenMetrics: the newest rows of each GPU, read by prometheus_client's OpenMetrics and Prometheus text parsers.
add_test(NAME cli.db_export_openmetrics COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/openmetrics_check.py export ${_ms}
                                                ${_history_db})
memstress_cli_test(db_export_to_file 0 -- ${_ms} db export --db ${_history_db} --format openmetrics
                   --out ${CMAKE_CURRENT_BINARY_DIR}/fleet.prom)
memstress_cli_test(db_export_bad_format --match "--format" 2 -- ${_ms} db export --db ${_history_db} --format csv)
set_tests_properties(
  cli.db_history_gpu cli.db_history_host_json cli.db_history_unknown_gpu cli.db_history_neither cli.db_compare_drivers
  cli.db_compare_drivers_json cli.db_compare_same_driver cli.db_compare_bad_threshold cli.db_export_openmetrics
  cli.db_export_to_file cli.db_export_bad_format PROPERTIES FIXTURES_REQUIRED fleet_history)
set_tests_properties(cli.db_export_openmetrics PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)

# The same store on PostgreSQL (tests/db/postgresql.cmake: a throwaway server, its database `memstress` empty at
# the start), driven as users drive it: both drivers' files and a bad one, again (unchanged), then every query.
if(MEMSTRESS_PG_DB)
  memstress_cli_test(
    db_pg_ingest
    --match "skipped '[^']*truncated.json': "
    --stdout-match "13 file\\(s\\): 12 added, 0 replaced, 0 unchanged, 1 skipped. 'postgresql:///memstress[^']*' holds 12 run\\(s\\), 48 row\\(s\\)"
    2
    --
    ${_ms}
    db
    ingest
    ${_old_nodes}
    ${_nodes}
    ${_fleet}/truncated.json
    --db
    ${MEMSTRESS_PG_DB})
  set_tests_properties(cli.db_pg_ingest PROPERTIES FIXTURES_REQUIRED postgresql FIXTURES_SETUP fleet_pg)
  memstress_cli_test(db_pg_ingest_again --stdout-match "12 file\\(s\\): 0 added, 0 replaced, 12 unchanged" 0 -- ${_ms} db
                     ingest ${_old_nodes} ${_nodes} --db ${MEMSTRESS_PG_DB})
  memstress_cli_test(db_pg_outliers --stdout-match "node04 +GPU-00000000-0000-0000-0000-000000000004 +0000:04:00.0"
                     --stdout-match "^8 outlier\\(s\\) among 6 GPU\\(s\\)" 1 -- ${_ms} db outliers --db ${MEMSTRESS_PG_DB})
  memstress_cli_test(
    db_pg_history
    --stdout-match "^2026-11-2.*580.159.04 +[0-9.]+ GB/s +-(8|9)\\.[0-9]% +<- driver 570.195.03 -> 580.159.04"
    --stdout-match "^4 series on 1 GPU\\(s\\), 4 driver change\\(s\\) marked"
    0
    --
    ${_ms}
    db
    history
    --db
    ${MEMSTRESS_PG_DB}
    --gpu
    GPU-00000000-0000-0000-0000-000000000004
    --metric
    GB/s)
  memstress_cli_test(
    db_pg_compare
    --stdout-match "^driver 570.195.03 -> 580.159.04: 6 GPU\\(s\\) ran under both. [0-9]+ measurement\\(s\\): 2 WORSE, 0 BETTER"
    1
    --
    ${_ms}
    db
    compare
    --db
    ${MEMSTRESS_PG_DB}
    --driver
    570.195.03
    --driver
    580.159.04)
  add_test(NAME cli.db_pg_export_openmetrics COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/openmetrics_check.py export ${_ms}
                                                     ${MEMSTRESS_PG_DB})
  set_tests_properties(cli.db_pg_export_openmetrics PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77)
  set_tests_properties(cli.db_pg_ingest_again cli.db_pg_outliers cli.db_pg_history cli.db_pg_compare
                       cli.db_pg_export_openmetrics PROPERTIES FIXTURES_REQUIRED "postgresql;fleet_pg")
  memstress_cli_test(db_pg_no_such_database --match "--db 'postgresql:///nosuch[^']*': cannot connect: .*nosuch" 2 --
                     ${_ms} db outliers --db "postgresql:///nosuch?host=${MEMSTRESS_PG_DIR}&port=5432&user=postgres")
  set_tests_properties(cli.db_pg_no_such_database PROPERTIES FIXTURES_REQUIRED postgresql)
endif()

# The outlier rule on a synthetic fleet made from a real run (scripts/dev/synthetic_fleet.py: 200 GPUs on 25 nodes, two
# drivers, 20 runs each, 1,000 files, slow GPUs planted on H2D, an all-reduce and allocator latency): every planted
# GPU found on its metric, at most 1% of the healthy ones flagged; the files ingested as the two folders they are in.
# Not timed (scripts/dev/fleet-bench times fleets of 10,000 and 100,000 GPUs); left out of the sanitizer presets,
# where it would take minutes and test no more code.
add_test(NAME cli.db_synthetic_fleet COMMAND ${PROJECT_SOURCE_DIR}/scripts/dev/fleet-bench --memstress ${_ms} --work
                                             ${CMAKE_CURRENT_BINARY_DIR}/fleet-small --nodes 25 --runs 20 --accuracy-only)
set_tests_properties(cli.db_synthetic_fleet PROPERTIES LABELS "cpu;not-in-sanitizers" TIMEOUT 600)
# Nothing compared is no verdict (exit 2, naming the drivers held), and a password never reaches a message.
memstress_cli_test(db_compare_unknown_driver --match "no GPU in '[^']*' ran under both. drivers held: 570.195.03, 580.159.04"
                   2 -- ${_ms} db compare --db ${_history_db} --driver 570.195.03 --driver 999.99)
set_tests_properties(cli.db_compare_unknown_driver PROPERTIES FIXTURES_REQUIRED fleet_history)
memstress_cli_test(db_postgresql_password_parameter --match "--db 'postgresql:///x[?]host=/nonexistent&password=[*][*][*]'"
                   2 -- ${_ms} db outliers --db postgresql:///x?host=/nonexistent&password=secret)
# --groups: every judged group with each GPU's value (the report's fleet page); JSON only.
memstress_cli_test(db_outliers_groups --json-stdout --stdout-match "\"groups\": " --stdout-match "\"value\": 5[0-9]" 1 --
                   ${_ms} db outliers --db ${_fleet_db} --format json --groups)
memstress_cli_test(db_outliers_groups_table --match "--groups: only with --format json" 2 -- ${_ms} db outliers --db
                   ${_fleet_db} --groups)
set_tests_properties(cli.db_outliers_groups cli.db_outliers_groups_table PROPERTIES FIXTURES_REQUIRED fleet_db)

# The store and the results readers against hostile or careless inputs (tests/cli/test_store_safety.py, one CTest
# test per class): schema versions, ingests side by side, NUL bytes, store paths that are not stores, a
# read-only store, inputs without end, values no run writes. ConcurrentIngests also runs on PostgreSQL where the
# fixture's server is (MEMSTRESS_TEST_POSTGRESQL); elsewhere that half is skipped.
find_package(Python3 3.9 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  foreach(
    _class
    SchemaVersions
    ConcurrentIngests
    EveryByteWritten
    StorePaths
    ReadOnlyStore
    UnboundedInputs
    ValuesNoRunWrites
    IngestInputs
    CrashedIngest
    PruneRefusals)
    add_test(NAME cli.store_${_class} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_store_safety.py
                                              $<TARGET_FILE:memstress> -v ${_class})
    set_tests_properties(cli.store_${_class} PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
  endforeach()
  # What db prints for people (tests/cli/test_db_output.py, one CTest test per class).
  foreach(_class IngestSummary NotesOnTheirOwnLines TablesInUnits GpuByPrefix)
    add_test(NAME cli.db_output_${_class} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_db_output.py
                                                  $<TARGET_FILE:memstress> -v ${_class})
    set_tests_properties(cli.db_output_${_class} PROPERTIES LABELS cpu TIMEOUT 300 ENVIRONMENT
                                                            "PYTHONDONTWRITEBYTECODE=1")
  endforeach()
  if(MEMSTRESS_PG_ADMIN)
    set_tests_properties(
      cli.store_ConcurrentIngests
      PROPERTIES FIXTURES_REQUIRED postgresql ENVIRONMENT
                 "PYTHONDONTWRITEBYTECODE=1;MEMSTRESS_TEST_POSTGRESQL=${MEMSTRESS_PG_ADMIN}")
  endif()
endif()

# db train: the shipped H100 profile's floors from the six H100s (Note [Floors from the fleet]): the two checks
# the fleet measured (pinned H2D and D2H at 256 MiB) get median - 3 scaled MADs and say so, the others keep
# their golden values and say why; accept then FAILs the planted slow GPU, which 0.75 x golden passed.
set(_trained ${CMAKE_CURRENT_BINARY_DIR}/h100-fleet.yaml)
memstress_cli_test(
  db_train
  --stdout-match "^pinned H2D 256 MiB +6 +1 +54.78 +0.5478 +>= 53.14"
  --stdout-match "^not trained: D2D 256 MiB: 0 GPU\\(s\\) of NVIDIA H100 80GB HBM3 under driver 580.159.04 measured it \\(needs 5\\)"
  --stdout-match "^2 of 8 checks trained from .*fleet.sqlite GPU model NVIDIA H100 80GB HBM3 under driver 580.159.04 \\(k = 3\\)"
  0
  --
  ${_ms}
  db
  train
  --db
  ${_fleet_db}
  --profile
  h100
  --write
  ${_trained})
set_tests_properties(cli.db_train PROPERTIES FIXTURES_REQUIRED fleet_db FIXTURES_SETUP fleet_trained)
memstress_cli_test(
  db_train_floor_fails_the_slow_gpu
  --stdout-match
  "^FAIL  pinned H2D 256 MiB: measured bad: 50.32 GB/s \\(1 row\\), needs >= 53.14 GB/s \\(fleet: median 54.78 GB/s - 3 x 0.5478 GB/s \\(scaled MAD\\) over 6 GPUs, driver 580.159.04\\)"
  1
  --
  ${_ms}
  accept
  --profile
  ${_trained}
  --from
  ${_fleet}/node04.json)
memstress_cli_test(db_train_healthy_gpu_passes_the_floor --stdout-match "^PASS  pinned H2D 256 MiB: .*\\(fleet: median" 1
                   -- ${_ms} accept --profile ${_trained} --from ${_fleet}/node01.json)
set_tests_properties(cli.db_train_floor_fails_the_slow_gpu cli.db_train_healthy_gpu_passes_the_floor
                     PROPERTIES FIXTURES_REQUIRED fleet_trained)
# Too few GPUs: nothing trained, nothing written, exit 1.
memstress_cli_test(db_train_too_few_gpus --stdout-match "^not trained: pinned H2D 256 MiB: 6 GPU\\(s\\) .*\\(needs 7\\)"
                   --match "no check of .*h100.yaml trained from the fleet" 1 -- ${_ms} db train --db ${_fleet_db}
                   --profile h100 --min-gpus 7 --write ${CMAKE_CURRENT_BINARY_DIR}/never-written.yaml)
memstress_cli_test(db_train_no_such_model --match "the store holds no results of a NVIDIA H200 \\(the GPU of profile h200\\)"
                   2 -- ${_ms} db train --db ${_fleet_db} --profile h200 --write ${CMAKE_CURRENT_BINARY_DIR}/never.yaml)
set_tests_properties(cli.db_train_too_few_gpus cli.db_train_no_such_model PROPERTIES FIXTURES_REQUIRED fleet_db)
# Two drivers in one store: choose one; a driver the store lacks is named with those it holds.
memstress_cli_test(db_train_two_drivers --match
                   "the store holds NVIDIA H100 80GB HBM3 results under drivers 570.195.03, 580.159.04: choose one with --driver"
                   2 -- ${_ms} db train --db ${_history_db} --profile h100 --write ${CMAKE_CURRENT_BINARY_DIR}/never.yaml)
memstress_cli_test(db_train_unknown_driver --match
                   "--driver 999.1: the store holds NVIDIA H100 80GB HBM3 results under drivers 570.195.03, 580.159.04 only"
                   2 -- ${_ms} db train --db ${_history_db} --profile h100 --driver 999.1 --write
                   ${CMAKE_CURRENT_BINARY_DIR}/never.yaml)
memstress_cli_test(db_train_one_driver --stdout-match "under driver 570.195.03 \\(k = 2.5\\)" 0 -- ${_ms} db train --db
                   ${_history_db} --profile h100 --driver 570.195.03 --k 2.5 --write ${CMAKE_CURRENT_BINARY_DIR}/h100-570.yaml)
set_tests_properties(cli.db_train_two_drivers cli.db_train_unknown_driver cli.db_train_one_driver PROPERTIES
                     FIXTURES_REQUIRED fleet_history)
memstress_cli_test(db_train_bad_k --match "--k" 2 -- ${_ms} db train --db ${_fleet_db} --profile h100 --k 0 --write
                   ${CMAKE_CURRENT_BINARY_DIR}/never.yaml)

# A query leaves nothing beside the store: no -wal or -shm (Note [Reading a store]).
add_test(NAME cli.db_query_leaves_no_wal_files
         COMMAND sh -c "d=\"$1\"; rm -rf \"$d\"; mkdir -p \"$d\" && \"$0\" db ingest \"$2\" --db \"$d/s.sqlite\" >/dev/null && \
\"$0\" db outliers --db \"$d/s.sqlite\" >/dev/null; \"$0\" db history --db \"$d/s.sqlite\" --gpu GPU-x >/dev/null 2>&1; \
test ! -e \"$d/s.sqlite-wal\" && test ! -e \"$d/s.sqlite-shm\""
                 ${_ms} ${CMAKE_CURRENT_BINARY_DIR}/db-no-wal ${PROJECT_SOURCE_DIR}/tests/data/fleet/node01.json)
set_tests_properties(cli.db_query_leaves_no_wal_files PROPERTIES LABELS cpu TIMEOUT 60)

# Output that cannot be written (a full disk) is an error, never exit 0 with a cut-short export.
add_test(NAME cli.db_export_to_a_full_disk_fails
         COMMAND sh -c "d=\"$1\"; rm -rf \"$d\"; mkdir -p \"$d\" && \"$0\" db ingest \"$2\" --db \"$d/s.sqlite\" >/dev/null && \
\"$0\" db export --db \"$d/s.sqlite\" --format openmetrics >/dev/full 2>\"$d/err\"; test $? = 3 && \
grep -q 'cannot write the output to standard output' \"$d/err\""
                 ${_ms} ${CMAKE_CURRENT_BINARY_DIR}/db-full ${PROJECT_SOURCE_DIR}/tests/data/fleet/node01.json)
set_tests_properties(cli.db_export_to_a_full_disk_fails PROPERTIES LABELS cpu TIMEOUT 60)
