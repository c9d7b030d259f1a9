# memstress db: the fleet store (harness/db) as users drive it, label cpu. Fixtures: tests/data/fleet/ (six
# H100s on six nodes, node04's H2D planted 8% slow; make_fleet.py) and every real result under results/.
set(_fleet ${PROJECT_SOURCE_DIR}/tests/data/fleet)
set(_fleet_db ${CMAKE_CURRENT_BINARY_DIR}/fleet.sqlite)
set(_nodes ${_fleet}/node01.json ${_fleet}/node02.json ${_fleet}/node03.json ${_fleet}/node04.json
           ${_fleet}/node05.json ${_fleet}/node06.json)

add_test(NAME cli.db_fresh COMMAND ${CMAKE_COMMAND} -E rm -f ${_fleet_db})
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
  ${_nodes}
  ${_fleet}/truncated.json
  --db
  ${_fleet_db})
set_tests_properties(cli.db_ingest_fleet PROPERTIES FIXTURES_REQUIRED fleet_db_fresh FIXTURES_SETUP fleet_db)
# Again: nothing changes, and it says so.
memstress_cli_test(db_ingest_again --stdout-match "^unchanged '[^']*node01.json'"
                   --stdout-match "6 file\\(s\\): 0 added, 0 replaced, 6 unchanged, 0 skipped.* 24 row\\(s\\)" 0 --
                   ${_ms} db ingest ${_nodes} --db ${_fleet_db})
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
memstress_cli_test(db_postgresql_not_yet --match "PostgreSQL is not supported by this build yet" 2 -- ${_ms} db
                   ingest ${_fleet}/node01.json --db postgresql://fleet)
memstress_cli_test(db_no_subcommand --match "subcommand" 2 -- ${_ms} db)

# Every committed real result: ingested, or skipped with a reason where it is not a results file.
add_test(NAME cli.db_real_results COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/db_real_results.py ${_ms} ${PROJECT_SOURCE_DIR}
                                          ${CMAKE_CURRENT_BINARY_DIR}/db-real)
set_tests_properties(cli.db_real_results PROPERTIES LABELS cpu TIMEOUT 300)
