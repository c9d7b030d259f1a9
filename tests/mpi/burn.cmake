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
