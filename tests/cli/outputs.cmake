# Outputs through links (tests/cli/CMakeLists.txt includes this; Label cpu, seconds): every output named through
# a symbolic link to a file replaces the file and keeps the link; two outputs on one file through a link to
# a file not yet written are refused, naming both flags.
add_test(NAME cli.outputs_through_links
         COMMAND sh -c "d=\"$1\"; rm -rf \"$d\"; mkdir -p \"$d\" && cd \"$d\" || exit 1; \
for f in run.json junit.xml; do echo old > real-$f; ln -s real-$f $f; done; \
\"$0\" run alloc-smoke -d sim -q --out run.json --junit junit.xml >/dev/null || exit 1; \
test -L run.json && test -L junit.xml && grep -q memstress.run/1 real-run.json && grep -q testsuites real-junit.xml || exit 1; \
ln -s later.json trace.csv; \"$0\" run alloc-smoke -d sim -q --out later.json --alloc-trace trace.csv 2>err.txt; \
test $? = 2 && grep -q 'alloc-trace trace.csv and --out later.json are the same file' err.txt && test ! -e later.json"
                 ${_ms} ${CMAKE_CURRENT_BINARY_DIR}/outputs-links)
set_tests_properties(cli.outputs_through_links PROPERTIES LABELS cpu TIMEOUT 60)
