# What makes a build from scratch shorter without changing what is built or how strictly:
#
#   MEMSTRESS_PCH: the memstress tool and its libraries (what scripts/run builds) each precompile, once, the
#     heavy headers they reach: the standard library's commonest, fmt and nlohmann/json, and CLI11 for the
#     command line. Each file then starts from that instead of parsing them again. Not the test executables
#     nor memstress_bench: there GCC 12 gave false -Warray-bounds warnings from std::string code inlined into
#     tests only with the precompiled header (test_table.cpp, test_case_clocks.cpp), which CI's -Werror makes
#     errors; the files of the tool and its libraries compile without a warning either way.
#     ON by default where the build has no debug information (the presets' Release), OFF where it has (-g:
#     Debug, RelWithDebInfo; the asan, tsan and fuzz presets): with -g, GCC's precompiled header is larger
#     than the parsing it saves, and loading it made files slower to compile, not faster. The builds without
#     it also keep every file honest: a file that forgets an #include it needs still compiles where the
#     header is precompiled, and fails there. Measured figures: docs/development.md.
#
# memstress_speed_up_build() is called once, after every target exists (the top-level CMakeLists.txt).
string(TOUPPER "${CMAKE_BUILD_TYPE}" _memstress_build_type)
if(" ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_memstress_build_type}} " MATCHES " -g[0-9]* ")
  set(_memstress_pch_default OFF)
else()
  set(_memstress_pch_default ON)
endif()
option(MEMSTRESS_PCH "Precompile the heavy third-party and standard headers of each C++ target (default: ON without -g)"
       ${_memstress_pch_default})

# _memstress_all_targets(OUT DIR): the targets defined in DIR and below.
function(_memstress_all_targets out dir)
  get_property(_targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _memstress_all_targets(_more "${_sub}")
    list(APPEND _targets ${_more})
  endforeach()
  set(${out} ${_targets} PARENT_SCOPE)
endfunction()

# _memstress_link_closure(OUT TARGET): every library name TARGET links, directly or through other targets.
function(_memstress_link_closure out target)
  set(_seen)
  set(_todo ${target})
  while(_todo)
    list(POP_FRONT _todo _t)
    if(NOT TARGET "${_t}")
      continue()
    endif()
    get_target_property(_aliased "${_t}" ALIASED_TARGET)
    if(_aliased)
      set(_t "${_aliased}")
    endif()
    if("${_t}" IN_LIST _seen)
      continue()
    endif()
    list(APPEND _seen "${_t}")
    get_target_property(_type "${_t}" TYPE)
    set(_libs)
    if(NOT _type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(_direct "${_t}" LINK_LIBRARIES)
      if(_direct)
        list(APPEND _libs ${_direct})
      endif()
    endif()
    get_target_property(_iface "${_t}" INTERFACE_LINK_LIBRARIES)
    if(_iface)
      list(APPEND _libs ${_iface})
    endif()
    foreach(_lib IN LISTS _libs)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" _lib "${_lib}")
      if(NOT _lib MATCHES "^\\$<")
        list(APPEND _todo "${_lib}")
      endif()
    endforeach()
  endwhile()
  set(${out} ${_seen} PARENT_SCOPE)
endfunction()

function(memstress_speed_up_build)
  if(NOT MEMSTRESS_PCH)
    return()
  endif()
  set(_std <algorithm> <array> <atomic> <chrono> <cstdint> <cstdio> <filesystem> <functional> <map> <memory>
           <mutex> <optional> <span> <string> <string_view> <thread> <unordered_map> <utility> <vector>)
  _memstress_all_targets(_targets "${PROJECT_SOURCE_DIR}")
  get_property(_rooms GLOBAL PROPERTY MEMSTRESS_ROOMS)
  set(_core_headers <fmt/format.h> <nlohmann/json.hpp>)
  foreach(_target IN LISTS _targets)
    get_target_property(_type ${_target} TYPE)
    get_target_property(_imported ${_target} IMPORTED)
    if(_imported OR NOT _type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    _memstress_link_closure(_links ${_target})
    set(_headers)
    if(fmt::fmt IN_LIST _links OR fmt IN_LIST _links)
      list(APPEND _headers <fmt/format.h>)
    endif()
    if(nlohmann_json IN_LIST _links OR nlohmann_json::nlohmann_json IN_LIST _links)
      list(APPEND _headers <nlohmann/json.hpp>)
    endif()
    if(CLI11::CLI11 IN_LIST _links)
      list(APPEND _headers <CLI/CLI.hpp>)
    endif()
    if(GTest::gtest IN_LIST _links OR GTest::GTest IN_LIST _links OR GTest::gtest_main IN_LIST _links
       OR benchmark::benchmark IN_LIST _links)
      continue() # the tests and memstress_bench: see above
    endif()
    if(NOT _headers)
      continue() # the allocator plugins: small C-ABI libraries of a file each
    endif()
    # C++ files only (the .cu files of kernels/ go through nvcc untouched): "<h>" becomes
    # "$<$<COMPILE_LANGUAGE:CXX>:<h$<ANGLE-R>>", the header's own '>' spelled so that it does not end the genex.
    set(_pch ${_std} ${_headers})
    list(TRANSFORM _pch REPLACE "^<(.*)>$" "$<$<COMPILE_LANGUAGE:CXX>:<\\1$<ANGLE-R>>")
    # The rooms of harness/ (harness/CMakeLists.txt) share memstress::core's flags and headers: they use its
    # precompiled header rather than build one each, as when they were one library.
    if(_target MATCHES "^memstress_(.+)$" AND CMAKE_MATCH_1 IN_LIST _rooms AND NOT _target STREQUAL "memstress_core"
       AND "${_headers}" STREQUAL "${_core_headers}")
      target_precompile_headers(${_target} REUSE_FROM memstress_core)
    else()
      target_precompile_headers(${_target} PRIVATE ${_pch})
    endif()
    # Through ccache, GCC must mark in its preprocessed output where the precompiled header goes, or ccache
    # cannot cache the file at all ("could not use precompiled header").
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
      target_compile_options(${_target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fpch-preprocess>)
    endif()
  endforeach()
endfunction()
