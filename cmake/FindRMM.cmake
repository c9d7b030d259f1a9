# FindRMM: RAPIDS RMM's C++ library (librmm.so and its headers) from the PyPI wheel librmm-cu13, which
# scripts/setup installs into the project's .venv (requirements.txt). Only what the rmm-* allocator peers
# need: the wheel's own rmm-config.cmake asks for CMake 4, and we build with 3.25.
#
# The wheel carries the CCCL (Thrust/CUB/libcu++) RMM was built with, newer than the CUDA toolkit's; its
# headers must come before the toolkit's (RMM refuses CCCL older than 3.3, with an #error). They are -isystem
# like every imported target's, so only their order puts them first: harness/CMakeLists.txt links RMM::rmm
# before CUDA::cudart_static in the one object library that uses it, a host .cpp compiled by the C++
# compiler.
# The definitions are the ones CCCL's own CMake package sets for RMM's build (namespaces RMM was built with).
#
# Searched: RMM_ROOT (the librmm package directory), then the librmm package of the python3 on PATH, then
# .venv/lib/python3*/site-packages/librmm. Provides RMM::rmm.
include(FindPackageHandleStandardArgs)

set(_rmm_hints ${RMM_ROOT} $ENV{RMM_ROOT})
find_package(Python3 QUIET COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -c "import os, librmm; print(os.path.dirname(librmm.__file__))"
    OUTPUT_VARIABLE _rmm_python_dir
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  list(APPEND _rmm_hints ${_rmm_python_dir})
endif()
file(GLOB _rmm_venv_dirs "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages/librmm")
list(APPEND _rmm_hints ${_rmm_venv_dirs})

find_path(
  RMM_INCLUDE_DIR rmm/mr/pool_memory_resource.hpp
  HINTS ${_rmm_hints}
  PATH_SUFFIXES include
  NO_DEFAULT_PATH)
find_path(
  RMM_CCCL_INCLUDE_DIR cuda/version
  HINTS ${_rmm_hints}
  PATH_SUFFIXES include/rapids
  NO_DEFAULT_PATH)
find_library(
  RMM_LIBRARY rmm
  HINTS ${_rmm_hints}
  PATH_SUFFIXES lib64 lib
  NO_DEFAULT_PATH)
if(RMM_INCLUDE_DIR)
  get_filename_component(_rmm_site "${RMM_INCLUDE_DIR}/../.." ABSOLUTE)
  find_path(
    RMM_LOGGER_INCLUDE_DIR rapids_logger/logger.hpp
    HINTS "${_rmm_site}/rapids_logger"
    PATH_SUFFIXES include
    NO_DEFAULT_PATH)
  find_library(
    RMM_LOGGER_LIBRARY rapids_logger
    HINTS "${_rmm_site}/rapids_logger"
    PATH_SUFFIXES lib64 lib
    NO_DEFAULT_PATH)
  # The wheel's VERSION file; elsewhere the version is empty, which find_package_handle_standard_args
  # takes as not matching (an undefined one would skip the check), so RMM is "not found" in AUTO.
  set(RMM_VERSION "")
  if(EXISTS "${RMM_INCLUDE_DIR}/../VERSION")
    file(STRINGS "${RMM_INCLUDE_DIR}/../VERSION" RMM_VERSION LIMIT_COUNT 1)
  endif()
endif()

find_package_handle_standard_args(
  RMM
  REQUIRED_VARS RMM_LIBRARY RMM_INCLUDE_DIR RMM_CCCL_INCLUDE_DIR RMM_LOGGER_LIBRARY RMM_LOGGER_INCLUDE_DIR
  VERSION_VAR RMM_VERSION HANDLE_VERSION_RANGE)

if(RMM_FOUND AND NOT TARGET RMM::rmm)
  add_library(RMM::logger SHARED IMPORTED)
  set_target_properties(RMM::logger PROPERTIES IMPORTED_LOCATION "${RMM_LOGGER_LIBRARY}"
                                               INTERFACE_INCLUDE_DIRECTORIES "${RMM_LOGGER_INCLUDE_DIR}")
  add_library(RMM::rmm SHARED IMPORTED)
  set_target_properties(
    RMM::rmm
    PROPERTIES IMPORTED_LOCATION "${RMM_LIBRARY}"
               INTERFACE_INCLUDE_DIRECTORIES "${RMM_CCCL_INCLUDE_DIR};${RMM_INCLUDE_DIR}"
               INTERFACE_COMPILE_DEFINITIONS
               "CUB_DISABLE_NAMESPACE_MAGIC;CUB_IGNORE_NAMESPACE_MAGIC_ERROR;THRUST_DISABLE_ABI_NAMESPACE;THRUST_IGNORE_ABI_NAMESPACE_ERROR;CCCL_DISABLE_PDL"
               INTERFACE_LINK_LIBRARIES "RMM::logger;CUDA::toolkit;${CMAKE_DL_LIBS}")
endif()
mark_as_advanced(RMM_INCLUDE_DIR RMM_CCCL_INCLUDE_DIR RMM_LIBRARY RMM_LOGGER_INCLUDE_DIR RMM_LOGGER_LIBRARY)
