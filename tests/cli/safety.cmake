# Outputs that cannot destroy, runs that cannot collide, signals that keep the results, inputs that cannot
# exhaust memory, bytes that are not UTF-8 (tests/cli/test_run_safety.py, one CTest test per class; label
# cpu). Run as root in CI, where device nodes can be made for the first class.
find_package(Python3 3.9 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "no python3 >= 3.9 found: the cli.safety_* tests are not registered")
  return()
endif()
foreach(_class OutputsNeverReplaceSpecialFiles OutputsNeverCollide RunsCannotCollide SignalsKeepTheResults InputsCannotExhaust
               BytesThatAreNotUtf8)
  add_test(NAME cli.safety_${_class} COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_run_safety.py
                                             $<TARGET_FILE:memstress> -v ${_class})
  # MEMSTRESS_SANITIZER tells InputsCannotExhaust that peak RSS is the sanitizer's (shadow memory, ASan's
  # quarantine): its memory figures are asserted in the plain presets only.
  set_tests_properties(cli.safety_${_class} PROPERTIES LABELS cpu TIMEOUT 600
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;MEMSTRESS_SANITIZER=${MEMSTRESS_SANITIZER}")
endforeach()
