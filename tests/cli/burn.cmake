# `memstress burn` on the simulated device (tests/cli/CMakeLists.txt includes this): whole burns in seconds,
# each planted fault FAILing first in the interval it begins, naming the GPU, and bad durations refused. Label
# cpu; about 35 s of burns, run side by side with the other cpu tests.
set(_bounds ${PROJECT_SOURCE_DIR}/tests/data/burn/sim-bounds.yaml)
memstress_cli_test(burn_healthy_sim_is_not_judged --stdout-match "^ok +rank 0, sim:80G: 4 interval"
                   --stdout-match "^verdict: NOT JUDGED \\(0 finding" 3 -- ${_ms} burn -d sim --duration 4s --interval 1
                   --profile ${_bounds} -q)
# PLANT CHECK AT: the first FAIL line is CHECK's, in interval AT.
foreach(_fault "after:2:flip data 2" "after:2:throttle clocks 2" "after:3:xid:79 health 3" "after:3:slow drift 3")
  separate_arguments(_f UNIX_COMMAND "${_fault}")
  list(GET _f 0 _plant)
  list(GET _f 1 _check)
  list(GET _f 2 _at)
  string(REGEX REPLACE "^after:[0-9]+:([a-z]+).*" "\\1" _kind "${_plant}")
  add_test(NAME cli.burn_planted_${_kind}_fails_in_its_interval
           COMMAND sh -c "out=$(MEMSTRESS_PLANT_FAULT=$1 \"$0\" burn -d sim --duration 5s --interval 1 --profile \"$2\" -q); \
rc=$?; echo \"$out\"; test $rc = 1 && echo \"$out\" | grep '^FAIL' | head -n 1 | grep -q \"^FAIL  rank 0, sim:80G: $3 in interval $4:\""
                   ${_ms} ${_plant} ${_bounds} ${_check} ${_at})
  set_tests_properties(cli.burn_planted_${_kind}_fails_in_its_interval PROPERTIES LABELS cpu TIMEOUT 120)
endforeach()
foreach(_bad 0 -5 nan inf 8d 1e999 5x)
  memstress_cli_test(burn_refuses_duration_${_bad} --match "--duration '${_bad}'" 2 -- ${_ms} burn -d sim --duration ${_bad})
endforeach()
memstress_cli_test(burn_refuses_interval_over_a_minute --match "--interval '61': too long" 2 -- ${_ms} burn -d sim
                   --interval 61)
memstress_cli_test(burn_refuses_unknown_profile_key --match "unknown key .drift." 2 -- ${_ms} burn -d sim --profile
                   ${PROJECT_SOURCE_DIR}/tests/data/burn/unknown-key.yaml)
add_test(NAME cli.burn_writes_a_verdict_per_gpu
         COMMAND sh -c "\"$0\" burn -d sim --duration 2s --interval 1 -q --verdict \"$1\" --out \"$2\"; test $? = 3 && \
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); g = d[\"gpus\"][0]; \
assert d[\"schema\"] == \"memstress.burn-verdict/1\" and d[\"verdict\"] == \"NOT JUDGED\" and g[\"intervals\"] == 2, d; \
r = json.load(open(sys.argv[2])); assert r[\"status\"] == \"complete\" and len(r[\"rows\"]) == 2, r[\"status\"]' \"$1\" \"$2\""
                 ${_ms} ${CMAKE_CURRENT_BINARY_DIR}/burn-verdict.json ${CMAKE_CURRENT_BINARY_DIR}/burn-rows.json)
set_tests_properties(cli.burn_writes_a_verdict_per_gpu PROPERTIES LABELS cpu TIMEOUT 120)
# --train: two healthy burns give golden values and a drift bound, in a profile a burn loads back (its verdict
# on this shared machine's noise is not the point); a planted throughput drop is trained on never (its row FAILed), exit 2. About 12 s.
add_test(NAME cli.burn_train_writes_a_profile_that_judges
         COMMAND sh -c "set -e; d=\"$2\"; rm -rf \"$d\"; mkdir -p \"$d\"; \
\"$0\" burn -d sim --duration 3s --interval 1 -q --profile \"$1\" --out \"$d/a.json\" || test $? = 3; \
\"$0\" burn -d sim --duration 3s --interval 1 -q --profile \"$1\" --out \"$d/b.json\" || test $? = 3; \
\"$0\" burn --train --profile \"$1\" --from \"$d/a.json\" \"$d/b.json\" --write \"$d/t.yaml\" | tee \"$d/train.txt\"; \
grep -q '^memory.GB/s: golden .* over 2), FAIL below' \"$d/train.txt\"; grep -q '^drift_pct: ' \"$d/train.txt\"; \
grep -q '^  memory.GB/s: {golden: ' \"$d/t.yaml\"; \
\"$0\" burn -d sim --duration 2s --interval 1 -q --profile \"$d/t.yaml\" > \"$d/judged.txt\" || true; \
grep -q 'profile sim-bounds' \"$d/judged.txt\"; \
MEMSTRESS_PLANT_FAULT=after:3:slow \"$0\" burn -d sim --duration 5s --interval 1 -q --profile \"$1\" --out \"$d/c.json\" || test $? = 1; \
rc=0; \"$0\" burn --train --profile \"$1\" --from \"$d/c.json\" --write \"$d/u.yaml\" 2> \"$d/err.txt\" || rc=$?; \
cat \"$d/err.txt\"; test $rc = 2; grep -q 'c.json: interval 3 of .* is fail' \"$d/err.txt\"; test ! -e \"$d/u.yaml\""
                 ${_ms} ${_bounds} ${CMAKE_CURRENT_BINARY_DIR}/burn-train)
set_tests_properties(cli.burn_train_writes_a_profile_that_judges PROPERTIES LABELS cpu TIMEOUT 120)
memstress_cli_test(burn_train_needs_its_inputs --match "--train: needs --profile" 2 -- ${_ms} burn --train
                   --profile h100-burn)
memstress_cli_test(burn_from_needs_train --match "--from and --write go with --train" 2 -- ${_ms} burn -d sim
                   --write x.yaml)
# A fault that begins inside an interval (3 s, intervals of 2 s) FAILs that interval (1), not the next. 6 s.
add_test(NAME cli.burn_planted_fault_mid_interval_fails_that_interval
         COMMAND sh -c "out=$(MEMSTRESS_PLANT_FAULT=after:3:flip \"$0\" burn -d sim --duration 6s --interval 2 --profile \"$1\" -q); \
rc=$?; echo \"$out\"; test $rc = 1 && echo \"$out\" | grep '^FAIL' | head -n 1 | grep -q '^FAIL  rank 0, sim:80G: data in interval 1:'"
                 ${_ms} ${_bounds})
set_tests_properties(cli.burn_planted_fault_mid_interval_fails_that_interval PROPERTIES LABELS cpu TIMEOUT 120)
