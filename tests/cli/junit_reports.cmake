# CI reports that say what the exit code says (tests/cli/CMakeLists.txt includes this). Label cpu; seconds.
# A run that could not start for want of a GPU writes a JUnit with one failing test naming why (exit 3), not
# no file; --fail-on-skip counts the skips as failures in its JUnit, as in its exit code.
add_test(NAME cli.junit_written_when_the_required_gpu_is_missing
         COMMAND sh -c "rm -f \"$1\"; \"$0\" run oom --require-gpu --junit \"$1\" -q; test $? = 3 && \
grep -q 'failures=\"1\"' \"$1\" && grep -q 'no CUDA device found' \"$1\"" ${_ms} ${CMAKE_CURRENT_BINARY_DIR}/require-gpu.xml)
set_tests_properties(cli.junit_written_when_the_required_gpu_is_missing PROPERTIES LABELS cpu TIMEOUT 60)
add_test(NAME cli.junit_fails_the_skips_of_fail_on_skip
         COMMAND sh -c "\"$0\" run smoke oom -d sim --fail-on-skip --junit \"$1\" -q >/dev/null; test $? = 1 && \
grep -q 'name=\"memstress.smoke\" tests=\"2\" failures=\"2\"' \"$1\" && grep -q 'fail-on-skip fails a skip' \"$1\"" ${_ms}
                 ${CMAKE_CURRENT_BINARY_DIR}/fail-on-skip.xml)
set_tests_properties(cli.junit_fails_the_skips_of_fail_on_skip PROPERTIES LABELS cpu TIMEOUT 120)
