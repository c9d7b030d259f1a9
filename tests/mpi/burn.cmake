# memstress burn under mpirun -np 2 on the simulated device (tests/mpi/CMakeLists.txt includes this): both
# ranks burn, rank 0 writes every rank's rows each interval and judges them; a planted flip (on both ranks)
# FAILs each GPU by name. About 10 s.
if(MPIEXEC_EXECUTABLE)
  add_test(
    NAME mpi.burn_two_ranks
    COMMAND
      sh -c "out=$(\"$1\" -np 2 \"$2\" burn -d sim:8G --duration 3s --interval 1 -q --profile \"$4\" --out \"$3\"); test $? = 3 || exit 1; \
echo \"$out\"; test $(echo \"$out\" | grep -c '^ok  ') = 2 && python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); \
assert sorted({row[\"rank\"] for row in r[\"rows\"]}) == [0, 1] and len(r[\"rows\"]) == 6, r[\"rows\"]' \"$3\" && \
out=$(MEMSTRESS_PLANT_FAULT=after:1:flip \"$1\" -np 2 -x MEMSTRESS_PLANT_FAULT \"$2\" burn -d sim:8G --duration 3s --interval 1 -q --profile \"$4\"); \
test $? = 1 && echo \"$out\" | grep -q '^FAIL  rank 0, sim:8G[^:]*: data in interval 1:' && echo \"$out\" | grep -q '^FAIL  rank 1, sim:8G[^:]*: data in interval 1:'"
      sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:memstress> ${CMAKE_CURRENT_BINARY_DIR}/burn-two-ranks.json
      ${PROJECT_SOURCE_DIR}/tests/data/burn/sim-bounds.yaml)
  set_tests_properties(
    mpi.burn_two_ranks
    PROPERTIES LABELS mpi
               TIMEOUT 120
               ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endif()
# A rank killed mid-burn (SIGKILL once rank 0's stream holds its interval 1, of 1 s each): the job fails, and
# the rows of the intervals that finished before it (0 and 1, of both ranks) are kept in rank 0's stream.
# About 5 s.
if(MPIEXEC_EXECUTABLE)
  add_test(
    NAME mpi.burn_a_killed_rank_fails_and_keeps_the_finished_intervals
    COMMAND
      sh -c "rm -f \"$3\" \"$3l\"; \"$1\" -np 1 \"$2\" burn -d sim:8G --duration 20s --interval 1 -q --timeout 5 --profile \"$4\" --out \"$3\" : \
-np 1 sh -c '\"$0\" burn -d sim:8G --duration 20s --interval 1 -q --timeout 5 --profile \"$1\" & p=$!; \
until grep -q \"interval.:.1.},.rank.:1\" \"$2\" 2>/dev/null; do sleep 0.1; done; kill -KILL $p; wait $p' \"$2\" \"$4\" \"$3l\"; \
rc=$?; echo \"exit $rc\"; test $rc != 0 && test $rc != 3 && python3 -c 'import json, sys; \
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]; \
done = {(r[\"rank\"], r[\"params\"][\"interval\"]) for r in rows if r.get(\"workload\") == \"burn\"}; \
assert {(0, \"0\"), (1, \"0\"), (0, \"1\"), (1, \"1\")} <= done and len(done) < 40, sorted(done)' \"$3l\""
      sh ${MPIEXEC_EXECUTABLE} $<TARGET_FILE:memstress> ${CMAKE_CURRENT_BINARY_DIR}/burn-killed-rank.json
      ${PROJECT_SOURCE_DIR}/tests/data/burn/sim-bounds.yaml)
  set_tests_properties(
    mpi.burn_a_killed_rank_fails_and_keeps_the_finished_intervals
    PROPERTIES LABELS mpi
               TIMEOUT 120
               ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1")
endif()
