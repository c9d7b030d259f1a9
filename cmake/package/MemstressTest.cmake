# memstress_add_test(): register a memstress run, an acceptance profile or a baseline comparison as a CTest
# test of another project. Installed with memstress (find_package(memstress) includes it).
#
#   memstress_add_test(NAME <name>
#                      RUN <workload>... | ACCEPT <profile> | COMPARE <base> <new>
#                      [DEVICE <cuda[:N] | sim[:CAPACITY]>]   # RUN and ACCEPT; default cuda
#                      [REQUIRE_GPU]                          # no GPU fails the test instead of skipping it
#                      [JUNIT <file>]                         # RUN and ACCEPT: memstress's own JUnit XML
#                      [LABELS <label>...] [TIMEOUT <seconds>] [WORKING_DIRECTORY <dir>]
#                      [ARGS <more memstress arguments>...])
#
# What CTest reports (memstress's exit codes: 0 pass, 1 a check or case failed, 2 bad usage, 3 the environment
# lacks what is needed):
# - RUN on a GPU (the default DEVICE) runs `memstress run <workloads> -d cuda --fail-on-skip -q`: a case skipped
#   on the GPU (it needs more GPUs, say) fails the test. Without a GPU memstress exits 3, which CTest reports
#   as *skipped* (SKIP_RETURN_CODE), never as passed; with REQUIRE_GPU, or MEMSTRESS_REQUIRE_GPU=1 in the
#   environment when the project is configured (GPU CI), it fails instead.
# - ACCEPT runs `memstress accept --profile <profile> -q`: FAIL fails the test, NOT JUDGED (exit 3: no GPU, or
#   checks that need more ranks) is skipped, or failed with REQUIRE_GPU. ARGS --from <results> judges results
#   already measured.
# - COMPARE runs `memstress compare <base> <new>`: a regression, or nothing compared, fails the test.
# Labels: `memstress` and the test's kind (`memstress-run`, `memstress-accept`, `memstress-compare`), plus
# LABELS.

include_guard(GLOBAL)

function(memstress_add_test)
  cmake_parse_arguments(PARSE_ARGV 0 _ms "REQUIRE_GPU" "NAME;ACCEPT;DEVICE;JUNIT;TIMEOUT;WORKING_DIRECTORY"
                        "RUN;COMPARE;LABELS;ARGS")
  if(NOT _ms_NAME)
    message(FATAL_ERROR "memstress_add_test: NAME is required")
  endif()
  if(_ms_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "memstress_add_test(${_ms_NAME}): ${_ms_KEYWORDS_MISSING_VALUES} given without a value")
  endif()
  if(_ms_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "memstress_add_test(${_ms_NAME}): unknown arguments: ${_ms_UNPARSED_ARGUMENTS}")
  endif()
  set(_kinds 0)
  foreach(_k RUN ACCEPT COMPARE)
    if(DEFINED _ms_${_k})
      math(EXPR _kinds "${_kinds} + 1")
    endif()
  endforeach()
  if(NOT _kinds EQUAL 1)
    message(FATAL_ERROR "memstress_add_test(${_ms_NAME}): give exactly one of RUN, ACCEPT or COMPARE")
  endif()
  if(NOT TARGET memstress::memstress)
    message(FATAL_ERROR "memstress_add_test(${_ms_NAME}): no memstress::memstress (find_package(memstress) first)")
  endif()
  if(NOT _ms_DEVICE)
    set(_ms_DEVICE cuda)
  endif()
  if("$ENV{MEMSTRESS_REQUIRE_GPU}" STREQUAL "1")
    set(_ms_REQUIRE_GPU TRUE)
  endif()
  string(REGEX MATCH "^cuda" _on_gpu "${_ms_DEVICE}")

  set(_junit)
  if(_ms_JUNIT)
    set(_junit --junit ${_ms_JUNIT})
  endif()
  if(DEFINED _ms_RUN)
    set(_kind run)
    set(_command run ${_ms_RUN} -d ${_ms_DEVICE} -q ${_junit})
    if(_on_gpu)
      list(APPEND _command --fail-on-skip)
    endif()
  elseif(DEFINED _ms_ACCEPT)
    set(_kind accept)
    set(_command accept --profile ${_ms_ACCEPT} -d ${_ms_DEVICE} -q ${_junit})
  else()
    list(LENGTH _ms_COMPARE _n)
    if(NOT _n EQUAL 2)
      message(FATAL_ERROR "memstress_add_test(${_ms_NAME}): COMPARE takes two results files, BASE and NEW")
    endif()
    set(_kind compare)
    set(_command compare ${_ms_COMPARE})
  endif()

  set(_where)
  if(_ms_WORKING_DIRECTORY)
    set(_where WORKING_DIRECTORY ${_ms_WORKING_DIRECTORY})
  endif()
  add_test(NAME ${_ms_NAME} COMMAND memstress::memstress ${_command} ${_ms_ARGS} ${_where})
  set(_labels memstress memstress-${_kind} ${_ms_LABELS})
  set_tests_properties(${_ms_NAME} PROPERTIES LABELS "${_labels}")
  if(_ms_TIMEOUT)
    set_tests_properties(${_ms_NAME} PROPERTIES TIMEOUT ${_ms_TIMEOUT})
  endif()
  if(NOT _ms_REQUIRE_GPU AND NOT _kind STREQUAL "compare")
    set_tests_properties(${_ms_NAME} PROPERTIES SKIP_RETURN_CODE 3)
  endif()
endfunction()
