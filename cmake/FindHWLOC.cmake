# FindHWLOC: hwloc (Debian's libhwloc-dev, which libopenmpi-dev brings), for the NUMA placement of host
# memory near each GPU (harness/memory/numa.hpp). Provides HWLOC::hwloc and HWLOC_VERSION.
include(FindPackageHandleStandardArgs)

find_path(HWLOC_INCLUDE_DIR hwloc.h HINTS ${HWLOC_ROOT} $ENV{HWLOC_ROOT} PATH_SUFFIXES include)
find_library(HWLOC_LIBRARY hwloc HINTS ${HWLOC_ROOT} $ENV{HWLOC_ROOT} PATH_SUFFIXES lib)
if(HWLOC_INCLUDE_DIR AND EXISTS "${HWLOC_INCLUDE_DIR}/hwloc.h")
  file(STRINGS "${HWLOC_INCLUDE_DIR}/hwloc.h" _hwloc_api REGEX "^#define HWLOC_API_VERSION 0x[0-9a-fA-F]+")
  if(_hwloc_api MATCHES "0x0*([0-9a-fA-F]+)([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])$")
    math(EXPR _major "0x${CMAKE_MATCH_1}")
    math(EXPR _minor "0x${CMAKE_MATCH_2}")
    math(EXPR _patch "0x${CMAKE_MATCH_3}")
    set(HWLOC_VERSION "${_major}.${_minor}.${_patch}")
  endif()
endif()

find_package_handle_standard_args(
  HWLOC
  REQUIRED_VARS HWLOC_LIBRARY HWLOC_INCLUDE_DIR
  VERSION_VAR HWLOC_VERSION)

if(HWLOC_FOUND AND NOT TARGET HWLOC::hwloc)
  add_library(HWLOC::hwloc UNKNOWN IMPORTED)
  set_target_properties(HWLOC::hwloc PROPERTIES IMPORTED_LOCATION "${HWLOC_LIBRARY}" INTERFACE_INCLUDE_DIRECTORIES
                                                                                      "${HWLOC_INCLUDE_DIR}")
endif()
mark_as_advanced(HWLOC_INCLUDE_DIR HWLOC_LIBRARY)
