# The RAPIDS RMM allocator peers (rmm-pool, rmm-arena, rmm-async; harness/alloc/rmm_allocator.cpp) are
# optional: they need librmm (the PyPI wheel librmm-cu13, which scripts/setup installs into .venv), and a GPU
# machine with no package index may not have it.
#
# MEMSTRESS_WITH_RMM: AUTO (default) builds them where cmake/FindRMM.cmake finds librmm and says so when not;
# ON requires it (CI: scripts/lib.sh passes it, so the peers' tests cannot silently vanish); OFF never builds
# them. Sets MEMSTRESS_HAVE_RMM. Without them, --allocator rmm-* says why and exits 3.
string(TOUPPER "${MEMSTRESS_WITH_RMM}" _rmm_choice)
if(NOT _rmm_choice MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "MEMSTRESS_WITH_RMM='${MEMSTRESS_WITH_RMM}': expected AUTO, ON or OFF")
endif()

set(MEMSTRESS_HAVE_RMM OFF)
if(_rmm_choice STREQUAL "OFF")
  message(STATUS "RMM allocator peers (rmm-*): not built, MEMSTRESS_WITH_RMM=OFF")
elseif(CUDAToolkit_VERSION_MAJOR LESS 13)
  # The wheel (librmm-cu13) carries a CUDA 13 runtime: with an older toolkit (and driver) its peers would
  # only fail at run time.
  set(_rmm_why "librmm-cu13 needs CUDA 13, and this toolkit is ${CUDAToolkit_VERSION}")
  if(_rmm_choice STREQUAL "ON")
    message(FATAL_ERROR "MEMSTRESS_WITH_RMM=ON: ${_rmm_why}")
  endif()
  message(STATUS "RMM allocator peers (rmm-*): not built, ${_rmm_why}")
else()
  find_package(RMM 26.10...<26.11) # the resources' constructors change between releases
  if(RMM_FOUND)
    set(MEMSTRESS_HAVE_RMM ON)
    message(STATUS "RMM allocator peers (rmm-pool, rmm-arena, rmm-async): built, on RMM ${RMM_VERSION}")
  elseif(_rmm_choice STREQUAL "ON")
    message(FATAL_ERROR "MEMSTRESS_WITH_RMM=ON, but librmm 26.10 was not found: pip install -r requirements.txt "
                        "into .venv (librmm-cu13), or set RMM_ROOT to the librmm package directory")
  else()
    message(STATUS "RMM allocator peers (rmm-*): not built, librmm not found (requirements.txt installs "
                   "librmm-cu13 into .venv; --allocator rmm-* then says so)")
  endif()
endif()
set(MEMSTRESS_HAVE_RMM
    ${MEMSTRESS_HAVE_RMM}
    CACHE INTERNAL "Whether the RMM allocator peers are built")
