# The bad-input audit: values that were rounded, ignored or
# accepted are run exactly or refused (exit 2, naming the flag, file or axis); nothing judged or compared
# is not a pass. Included by tests/cli/CMakeLists.txt (memstress_cli_test, ${_ms}). Label `cpu`.
set(_audit_data ${PROJECT_SOURCE_DIR}/tests/data)
set(_audit_files ${CMAKE_CURRENT_BINARY_DIR}/audit-files)
set(_audit_h100 ${PROJECT_SOURCE_DIR}/results/h100/faults-580.159.04/accept-healthy-1.json)
add_test(NAME cli.audit_files_made COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/make_audit_files.py ${_audit_files})
set_tests_properties(cli.audit_files_made PROPERTIES LABELS cpu FIXTURES_SETUP audit_files)
function(memstress_audit_file_test name)
  memstress_cli_test(${name} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED audit_files)
endfunction()

# 5. A case runs exactly the bytes asked for; its label is exact too (never "1.00M", never parsed back).
memstress_cli_test(audit_exact_bytes_param --stdout-match "^alloc-smoke,bytes=1050000B count=1," 0 -- ${_ms} run
                   alloc-smoke -p bytes=1050000 -p count=1 -n 1 -w 0 -d sim:1G -q --format csv)
memstress_cli_test(audit_exact_bytes_in_results --stdout-match "\"bytes\": \"1050000B\""
                   --stdout-match "\"requested_bytes.all.peak\": 1050000" 0 -- ${_ms} run alloc-smoke -p bytes=1050000
                   -p count=1 -n 1 -w 0 -d sim:1G -q --format json)
memstress_cli_test(audit_minbytes_odd_size --stdout-match "^alloc-smoke,bytes=1048577B count=1," 0 -- ${_ms} run
                   alloc-smoke -b 1048577 -e 1048577 -p count=1 -n 1 -w 0 -d sim:1G -q --format csv)
# -f 1.1: each step size x 1.1 rounded down to a whole byte; it failed blaming `-p alloc-smoke.bytes: '1.10M'`.
memstress_cli_test(
  audit_fractional_factor
  --stdout-match "^alloc-smoke,bytes=1M count=1,"
  --stdout-match "^alloc-smoke,bytes=1153433B count=1,"
  --stdout-match "^alloc-smoke,bytes=1268776B count=1,"
  0 -- ${_ms} run alloc-smoke -b 1M -e 1300000 -f 1.1 -p count=1 -n 1 -w 0 -d sim:1G -q --format csv)
# Sizes from -b/-e/-f outside the axis's bounds name the sweep, not a -p never typed.
memstress_cli_test(audit_sweep_below_axis_minimum
                   --match "-b/-e/-f \\(the sizes of smoke.bytes\\): '1B' is below the minimum 16B" 2 -- ${_ms} run
                   smoke -b 1 -e 64 -d sim:1G)

# 6. accept: nothing judged is not a pass.
memstress_cli_test(audit_accept_no_checks --stdout-match "^verdict: NOT JUDGED \\(the profile has no checks" 1 --
                   ${_ms} accept --profile ${_audit_data}/accept/no-checks.yaml -d sim:8G -q)
memstress_cli_test(audit_accept_every_check_skipped
                   --stdout-match "^SKIP  alloc-smoke passes on every rank: needs 2 ranks"
                   --stdout-match "^verdict: NOT JUDGED \\(0 of 1 checks judged, 1 skipped" 3 -- ${_ms} accept
                   --profile ${_audit_data}/accept/all-need-ranks.yaml -d sim:8G -q)
memstress_cli_test(
  audit_accept_no_gpu
  --stdout-match "^SKIP  fill bandwidth: not judged: its 1 row\\(s\\) were skipped \\(needs a real GPU"
  --stdout-match "^SKIP  pinned H2D: not judged"
  --stdout-match "^verdict: NOT JUDGED \\(0 of 3 checks judged, 3 skipped, 3 of them because their cases were skipped"
  3
  --
  ${_ms}
  accept
  --profile
  ${_audit_data}/accept/gpu-only.yaml
  -d
  sim:8G
  -q)

# 7. A simulated device holds at most 16 TiB (48-bit addresses).
memstress_cli_test(audit_sim_above_48_bits --match "--device" --match "16T" 2 -- ${_ms} run alloc-smoke -d sim:140T)

# 9. Every integer axis has a maximum, shown by `list`; above it: exit 2 naming the axis and the maximum.
memstress_cli_test(audit_count_above_maximum --match "-p alloc-smoke.count: '2147483648' is above the maximum 1000000" 2
                   -- ${_ms} run alloc-smoke -p count=2147483648 -d sim:8G)
memstress_cli_test(audit_ops_above_maximum --match "-p sizes.ops: '4294967297' is above the maximum 10000000" 2 --
                   ${_ms} run sizes -p ops=4294967297 -d sim:8G)
memstress_cli_test(audit_streams_ops_above_maximum --match "-p streams.ops: '4294967297' is above the maximum 1000000" 2
                   -- ${_ms} run streams -p ops=4294967297 -d sim:8G)
memstress_cli_test(audit_epochs_above_maximum --match "-p leak.epochs: '4294967297' is above the maximum 10000" 2 --
                   ${_ms} run leak -p epochs=4294967297 -d sim:8G)
memstress_cli_test(audit_list_shows_bounds --stdout-match "^  -p count=16  \\(integer, 1 to 1000000;"
                   --stdout-match "^  -p epochs=20  \\(integer, 3 to 10000;"
                   --stdout-match "^  -p alloc_prob=0.55  \\(number, 0 to 1;" 0 -- ${_ms} list)
memstress_cli_test(audit_list_json_shows_maximum --stdout-match "\"maximum\": 1000000" 0 -- ${_ms} list --format json)

# 10. Values refused (exit 2, naming the input) rather than run, rounded or ignored.
memstress_cli_test(audit_alloc_prob_nan --match "-p sizes.alloc_prob: 'nan' is not a finite number" 2 -- ${_ms} run
                   sizes -p alloc_prob=nan -d sim:8G)
memstress_cli_test(audit_retained_nan --match "-p leak.retained: 'nan' is not a finite number" 2 -- ${_ms} run leak -p
                   retained=nan -d sim:8G)
memstress_cli_test(audit_alloc_prob_above_one --match "-p sizes.alloc_prob: '2' is above the maximum 1" 2 -- ${_ms} run
                   sizes -p alloc_prob=2 -d sim:8G)
memstress_cli_test(audit_min_bytes_above_max_bytes
                   --match "-p sizes: min_bytes \\(1M\\) must be at least 1 and at most max_bytes \\(512K\\)" 2 --
                   ${_ms} run sizes -p min_bytes=1M -p max_bytes=512K -d sim:8G)
memstress_cli_test(audit_factor_inf --match "-f/--stepfactor must be a finite number greater than 1, not inf" 2 --
                   ${_ms} run alloc-smoke -b 1M -e 4M -f inf -d sim:8G)
memstress_cli_test(audit_stepbytes_zero --match "-i/--stepbytes '0': the step must be at least 1 byte" 2 -- ${_ms} run
                   alloc-smoke -b 1M -e 4M -i 0 -d sim:8G)
set(_i 0)
foreach(_seed -1 18446744073709551616 1e23 1.5 +1 0x10 " 1" "")
  math(EXPR _i "${_i} + 1")
  string(REPLACE "+" "\\+" _seed_re "${_seed}")
  # Through sh: CTest drops an empty argument, and `--seed=` would take the next flag as its value.
  memstress_cli_test(audit_bad_seed_${_i}
                     --match "--seed '${_seed_re}': expected a whole number from 0 to 18446744073709551615" 2 --
                     sh -c "exec \"\$0\" run alloc-smoke -d sim:8G --seed \"\$1\"" ${_ms} "${_seed}")
endforeach()
memstress_cli_test(audit_seed_largest --stdout-match "\"seed\": 18446744073709551615" 0 -- ${_ms} run alloc-smoke -p
                   bytes=1M -p count=1 -n 1 -w 0 --seed 18446744073709551615 -d sim:8G -q --format json)
# Profiles (harness/accept/profile.cpp): golden values that judge nothing, unknown and repeated keys, and (13.)
# an alias of the wrong kind, each named with the key and its line.
set(_says_golden-nan "golden-nan.yaml: checks\\[0\\]: `golden` must be a finite number, not '.nan' \\(line 9\\)")
set(_says_golden-zero
    "golden-zero.yaml: checks\\[0\\] \\(fill bandwidth 1 GiB\\): golden must be a number above 0, not 0 \\(line 9\\)")
set(_says_unknown-key "unknown-key.yaml: checks\\[0\\]: unknown key `factr` \\(line 11\\)")
set(_says_duplicate-key "duplicate-key.yaml: checks\\[0\\]: key `min` is given twice \\(lines 10 and 11\\)")
set(_says_alias-map "alias-map.yaml: checks\\[0\\].where: `bytes` must be a single value, not a map \\(line 7\\)")
# yaml-cpp 0.8 (Ubuntu 24.04) names the anchor after "not defined", 0.7 (Debian 12) does not.
set(_says_alias-undefined "alias-undefined.yaml: not YAML: .*anchor is not defined.* \\(line 4: `gpu: \\*h100_name`\\)")
foreach(_profile golden-nan golden-zero unknown-key duplicate-key alias-map alias-undefined)
  string(MAKE_C_IDENTIFIER ${_profile} _name)
  memstress_cli_test(audit_profile_${_name} --match "${_says_${_profile}}" 2 -- ${_ms} accept --profile
                     ${_audit_data}/accept/${_profile}.yaml --from ${_audit_h100})
endforeach()
# An empty path for any flag that names a file to write: `memstress ARGS... FLAG ''` (the empty argument
# added by sh: CTest drops an empty argument, and `FLAG=` would take the next word or none).
function(memstress_empty_path_test name flag)
  memstress_cli_test(audit_empty_path_${name} --match "${flag}: an empty path" 2 -- sh -c "exec \"\$0\" \"\$@\" ''"
                     ${_ms} ${ARGN} ${flag})
endfunction()
set(_two ${_audit_data}/replay/two_devices.trace.csv)
memstress_empty_path_test(run_out --out run alloc-smoke -d sim:8G)
memstress_empty_path_test(run_junit --junit run alloc-smoke -d sim:8G)
memstress_empty_path_test(run_snapshot --snapshot run alloc-smoke -d sim:8G)
memstress_empty_path_test(run_alloc_trace --alloc-trace run alloc-smoke -d sim:8G)
memstress_empty_path_test(accept_out --out accept --profile h100 --from ${_audit_h100})
memstress_empty_path_test(accept_junit --junit accept --profile h100 --from ${_audit_h100})
memstress_empty_path_test(accept_write --write accept --profile h100 --from ${_audit_h100} --train)
memstress_empty_path_test(replay_out --out replay ${_two} -d sim:1G)
memstress_empty_path_test(replay_timeline --timeline replay ${_two} -d sim:1G)
memstress_empty_path_test(doctor_out --out doctor ${_two})
memstress_empty_path_test(predict_batch_out --out predict-batch ${_two} ${_two} --batch 8,16)
memstress_empty_path_test(predict_batch_write_trace --write-trace predict-batch ${_two} ${_two} --batch 8,16)
set(_never_written ${CMAKE_CURRENT_BINARY_DIR}/never-written.yaml)
memstress_cli_test(audit_accept_write_without_train
                   --match "--write [^ ]*never-written.yaml: writes the trained profile, so it goes with --train" 2 --
                   ${_ms} accept --profile h100 --from ${_audit_h100} --write ${_never_written})

# 12. compare with a side of no rows: nothing compared is not "no regression"; accept --from an unfinished run
# fails.
memstress_audit_file_test(audit_compare_new_without_rows
                          --stdout-match "^result: NOTHING COMPARED \\(NEW '[^']*no-rows.jsonl' has no rows" 1 -- ${_ms}
                          compare ${_audit_data}/compare/base.json ${_audit_files}/no-rows.jsonl)
memstress_audit_file_test(audit_compare_base_without_rows
                          --stdout-match "^result: NOTHING COMPARED \\(BASE '[^']*no-rows.json' has no rows" 1 -- ${_ms}
                          compare ${_audit_files}/no-rows.json ${_audit_data}/compare/base.json)
memstress_audit_file_test(audit_compare_json_without_rows
                          --stdout-match "\"nothing_compared\": \"NEW '[^']*no-rows.json' has no rows" 1 -- ${_ms}
                          compare ${_audit_data}/compare/base.json ${_audit_files}/no-rows.json --format json)
# A run that never finished fails closed: every check it has rows for passes, and the run's own check fails.
memstress_audit_file_test(
  audit_accept_from_unfinished_run --stdout-match "^FAIL  run: complete: '[^']*unfinished.jsonl' did not finish \\(status running"
  --stdout-match "^verdict: FAIL \\(28 of 28 checks passed, 5 skipped, 1 run check failed" 1 -- ${_ms} accept --profile h100
  --from ${_audit_files}/unfinished.jsonl)
memstress_audit_file_test(audit_accept_from_no_rows --match "--from [^ ]*no-rows.jsonl: no rows" 1 -- ${_ms} accept
                          --profile h100 --from ${_audit_files}/no-rows.jsonl)

# 13. Messages: a request of 2^64 - 1 bytes is an unsigned count; a GPU with no name is "an unknown GPU". (Rank 1
# giving up one --timeout after rank 0 died, not two: tests/mpi, mpi.rank0_exit, label mpi.)
# A request no device can have is refused (exit 2) as it is read, shown unsigned: sums of live bytes cannot wrap.
memstress_cli_test(audit_replay_huge_request --match "18446744073709551615 is more memory than any device has" 2 -- ${_ms} replay
                   ${_audit_data}/replay/huge-request.trace.csv -d sim:1G)
memstress_audit_file_test(audit_accept_unknown_gpu --match "the results are from an unknown GPU \\(they name none\\)"
                          2 -- ${_ms} accept --profile h100 --from ${_audit_files}/no-gpu-name.json)
