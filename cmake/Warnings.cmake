# memstress::warnings carries the warning set for every first-party target (host and device code);
# memstress::sanitizers carries MEMSTRESS_SANITIZER. Nothing here touches CMAKE_<LANG>_FLAGS.
add_library(memstress_warnings INTERFACE)
add_library(memstress::warnings ALIAS memstress_warnings)

set(_host_warnings -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow
                   -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual)
target_compile_options(memstress_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_host_warnings}>)
# Device code: nvcc's own diagnostics plus the host compiler's, without -Wpedantic/-Wold-style-cast
# (CUDA headers and the <<<>>> rewrite trip them).
string(REPLACE ";" "," _cuda_host_warnings "-Wall;-Wextra;-Wshadow")
target_compile_options(memstress_warnings
                       INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_cuda_host_warnings}>)
if(MEMSTRESS_WERROR)
  target_compile_options(
    memstress_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                 $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()

add_library(memstress_sanitizers INTERFACE)
add_library(memstress::sanitizers ALIAS memstress_sanitizers)
if(MEMSTRESS_SANITIZER)
  if(NOT MEMSTRESS_SANITIZER MATCHES "^(address|thread)$")
    message(FATAL_ERROR "MEMSTRESS_SANITIZER must be 'address' or 'thread', not '${MEMSTRESS_SANITIZER}'")
  endif()
  set(_san -fsanitize=${MEMSTRESS_SANITIZER} -fno-omit-frame-pointer)
  if(MEMSTRESS_SANITIZER STREQUAL "address")
    list(APPEND _san -fsanitize=undefined)
  endif()
  target_compile_options(memstress_sanitizers INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_san}>)
  target_link_options(memstress_sanitizers INTERFACE ${_san})
endif()
