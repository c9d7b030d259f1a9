# Output a person can read: the run table and the progress line on the simulated device (label
# cpu). check_table.py: every workload's default table fits in 160 columns, --wide adds the spread and device
# columns, no exponents and no second names of a figure (`tables`); a slow case's live line is redrawn every
# second when forced on (`progress`).
set(_check_table ${CMAKE_CURRENT_SOURCE_DIR}/check_table.py)
add_test(NAME cli.table_fits_160_columns_for_every_workload COMMAND ${_check_table} ${_ms} tables --width 160)
# Label not-in-tsan: under ThreadSanitizer its two runs of every workload's default cases took 430 s alone and
# 695 s beside another test (the 600 s limit); cli.default_job_on_sim runs the same cases under TSan.
set_tests_properties(cli.table_fits_160_columns_for_every_workload PROPERTIES LABELS "cpu;not-in-tsan" TIMEOUT 600)
# 10M operations of sizes (the axis's maximum) on the simulated device: about 4 s here, so 4 draws at one a
# second; a machine 3 times faster still draws twice (the start and a tick), which is what is required.
add_test(NAME cli.progress_line_ticks_while_a_case_runs COMMAND ${_check_table} ${_ms} progress --updates 2 -- sizes -p
                                                                dist=uniform -p ops=10000000 -n 1 -w 0 -d sim)
# A timing test (draws against the wall clock), so left out of the sanitizer presets by label: under TSan
# its 10M operations ran past 300 s. The ticker thread itself ran under TSan with no report (sizes,
# ops=300000, --progress always: 7 draws).
set_tests_properties(cli.progress_line_ticks_while_a_case_runs PROPERTIES LABELS "cpu;not-in-sanitizers" TIMEOUT 300
                     RUN_SERIAL TRUE)

# The default table: the headline metric in human units, only the parameters that vary, what is the same for
# every row on one line above it; --wide: every metric and parameter with the spread.
memstress_cli_test(table_default --stdout-match "^every row: allocator caching, device sim:80G$"
                   --stdout-match "^WORKLOAD +CASE +VERDICT +METRIC +VALUE +NOTE$"
                   --stdout-match "^sizes +dist=uniform +pass +ops +[0-9.]+[kM]? ops/s$" 0 -- ${_ms} run sizes -n 2 -w 0
                   -d sim -q)
memstress_cli_test(table_wide --stdout-match "^WORKLOAD +CASE +ALLOCATOR +DEVICE +VERDICT +METRIC +N +MEDIAN +P10 +P90 +CV +UNIT +NOTE$"
                   --stdout-match "^sizes +ops=20000 alloc_prob=0.55 dist=uniform .* +caching +sim:80G +pass +ops +2 +"
                   --stdout-match "^ +alloc_p99 +2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +(ns|us)$"
                   --stdout-match "^ +peak_reserved +2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +GiB$" 0 -- ${_ms} run sizes -n 2
                   -w 0 -d sim -q --wide)
# No spread for one sample: -n 1 (sizes records ops once a repetition), or a metric measured once (oom).
memstress_cli_test(table_one_repetition_has_no_spread --stdout-match " +ops +1 +[0-9.]+ +- +- +- +[kM]? ?ops/s$"
                   --stdout-match "^ +num_ooms +1 +0 +- +- +- +count$" 0 -- ${_ms} run sizes -p dist=uniform -n 1 -w 0 -d sim -q
                   --wide)
memstress_cli_test(table_one_measurement_has_no_spread --stdout-match "largest_allocatable +1 +80 +- +- +- +GiB$" 0 -- ${_ms} run
                   oom -p search=largest_single -p state=fresh -d sim -q --wide)
# The leak detector's self-test says so, in the table and in the JSON row.
memstress_cli_test(table_labels_the_leak_self_test --stdout-match "^leak +retained=0\\.05 +pass +leaked +[0-9.]+ MiB +self-test: planted leak found$"
                   --stdout-match "^leak +retained=0 +pass +leaked +0 B$" 0 -- ${_ms} run leak -n 2 -w 0 -d sim -q)
memstress_cli_test(json_row_says_self_test --json-stdout --stdout-match "\"self_test\": \"planted leak found\"" 0 --
                   ${_ms} run leak -p retained=0.05 -n 1 -w 0 -d sim -q --format json)
# Several allocators: each progress line names the case's.
memstress_cli_test(progress_names_the_allocator --match "\\[2/2\\] alloc-smoke bytes=1M count=2 \\[expandable\\]: pass"
                   0 -- ${_ms} run alloc-smoke -p bytes=1M -p count=2 -n 1 -d sim --allocator caching,expandable)
memstress_cli_test(bad_progress --match "--progress" 2 -- ${_ms} run alloc-smoke -d sim --progress sometimes)
