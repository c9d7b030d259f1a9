# Installing memstress like a real tool (`cmake --install build/<preset> --prefix P`), packaging it
# (CPack: TGZ, and DEB where dpkg-deb is found) and uninstalling it (`cmake --build build/<preset>
# --target uninstall`, from install_manifest.txt).
#
#   P/bin/memstress, P/bin/memstress_bench
#   P/share/memstress/python/       the package memstress (python/memstress: the report, the converter, the
#                                   validator, the recorder; python3 -m memstress.report, ...) and
#                                   memstress_torch.py, the name PyTorch users import the recorder by
#   P/share/memstress/scripts/      ctest-junit-reasons (CTest's JUnit XML with the skip reasons); slurm/: the
#                                   gate for Slurm's Prolog and HealthCheckProgram, the sbatch recipes
#   P/share/memstress/profiles/     the shipped acceptance profiles (memstress accept --profile h100)
#   P/share/memstress/results/schema/  the results schemas
#   P/share/doc/memstress/README.md, docs/  the documentation (the README links to docs/*.md)
#   P/lib/memstress/                librmm.so, librapids_logger.so (the RMM peers, where built); plugins/: the
#                                   example allocator plugins
#   P/include/memstress/            allocator_plugin.h, the interface of --allocator plugin:PATH
#   P/lib/cmake/memstress/          memstressConfig.cmake (+ version): find_package(memstress) gives
#                                   memstress::memstress and memstress_add_test() (MemstressTest.cmake)
#
# The binary finds P/share/memstress from its own location (Note [Where memstress finds its files] in
# harness/core/data_dir.hpp). MEMSTRESS_DATA_SUBDIR and MEMSTRESS_DATA_RELDIR are set in
# cmake/InstallDirs.cmake, before the targets.

if(SKBUILD)
  include(Wheel) # the wheel's files only
  return()
endif()

install(TARGETS memstress RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET memstress_bench)
  install(TARGETS memstress_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(PROGRAMS scripts/ctest-junit-reasons DESTINATION ${MEMSTRESS_DATA_SUBDIR}/scripts)
# Cluster glue (docs/slurm.md): the Prolog/HealthCheckProgram gate, which finds this prefix's bin/memstress, and the
# sbatch recipes.
install(PROGRAMS scripts/slurm/memstress-gate scripts/slurm/bench.sbatch scripts/slurm/accept.sbatch
        DESTINATION ${MEMSTRESS_DATA_SUBDIR}/scripts/slurm)
install(FILES python/memstress_torch.py DESTINATION ${MEMSTRESS_DATA_SUBDIR}/python)
install(DIRECTORY python/memstress DESTINATION ${MEMSTRESS_DATA_SUBDIR}/python FILES_MATCHING PATTERN "*.py"
        PATTERN "__pycache__" EXCLUDE)
# The recorder on Python's own path too, where the prefix holds a directory of it (~/.local's user site, a virtual
# environment, Debian's /usr/local dist-packages): `import memstress_torch` with no PYTHONPATH. There go
# memstress_torch.py and the files of the package it imports (memstress/__init__.py, recorder.py, recorder_marks.py,
# find_max.py and _launcher.py; and api.py: memstress.doctor()), not the programs, which find results/schema/ beside
# python/ under share/memstress. Which directory is decided at install time, for the prefix installed to (cmake/python_site_dir.py); where there is none,
# PYTHONPATH=$(memstress --python-path) imports it, and the install says so.
find_package(Python3 3.9 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  install(
    CODE "set(_ms_python \"${Python3_EXECUTABLE}\")
          if(EXISTS \"\${CMAKE_INSTALL_PREFIX}/bin/python3\")
            set(_ms_python \"\${CMAKE_INSTALL_PREFIX}/bin/python3\") # a virtual environment: its own python decides
          endif()
          execute_process(COMMAND \"\${_ms_python}\" \"${PROJECT_SOURCE_DIR}/cmake/python_site_dir.py\"
                            \"\${CMAKE_INSTALL_PREFIX}\" OUTPUT_VARIABLE _ms_site OUTPUT_STRIP_TRAILING_WHITESPACE)
          if(_ms_site)
            file(INSTALL \"${PROJECT_SOURCE_DIR}/python/memstress_torch.py\" DESTINATION \"\${_ms_site}\")
            file(INSTALL \"${PROJECT_SOURCE_DIR}/python/memstress/__init__.py\"
                         \"${PROJECT_SOURCE_DIR}/python/memstress/recorder.py\"
                         \"${PROJECT_SOURCE_DIR}/python/memstress/recorder_marks.py\"
                         \"${PROJECT_SOURCE_DIR}/python/memstress/find_max.py\"
                         \"${PROJECT_SOURCE_DIR}/python/memstress/_launcher.py\"
                         \"${PROJECT_SOURCE_DIR}/python/memstress/api.py\" DESTINATION \"\${_ms_site}/memstress\")
          else()
            message(STATUS \"memstress_torch.py: no directory of \${CMAKE_INSTALL_PREFIX} is on the path of \${_ms_python}: import it with PYTHONPATH=$(memstress --python-path)\")
          endif()")
endif()
install(DIRECTORY profiles/ DESTINATION ${MEMSTRESS_DATA_SUBDIR}/profiles FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY results/schema/ DESTINATION ${MEMSTRESS_DATA_SUBDIR}/results/schema FILES_MATCHING
        PATTERN "*.json")
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")

# The CMake package another project's tests find memstress by.
include(CMakePackageConfigHelpers)
set(_memstress_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/memstress)
configure_package_config_file(cmake/package/memstressConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/memstressConfig.cmake
                              INSTALL_DESTINATION ${_memstress_cmake_dir} PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/memstressConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_BINARY_DIR}/package/memstressConfig.cmake
              ${CMAKE_BINARY_DIR}/package/memstressConfigVersion.cmake cmake/package/MemstressTest.cmake
        DESTINATION ${_memstress_cmake_dir})

# An installed binary keeps the run paths of libraries outside the system's (NCCL in the CUDA toolkit,
# Open MPI's own directory), so it starts without LD_LIBRARY_PATH as the build tree's does.
set_target_properties(memstress PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
if(TARGET memstress_bench)
  set_target_properties(memstress_bench PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
endif()

# The RMM peers' libraries (the wheel's librmm.so and librapids_logger.so) are installed with the binaries and
# found through $ORIGIN, so an installed or moved memstress does not depend on the checkout's .venv.
if(MEMSTRESS_HAVE_RMM)
  install(FILES ${RMM_LIBRARY} ${RMM_LOGGER_LIBRARY} DESTINATION ${CMAKE_INSTALL_LIBDIR}/memstress)
  set_property(TARGET memstress APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}/memstress")
  if(TARGET memstress_bench)
    set_property(TARGET memstress_bench APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}/memstress")
  endif()
endif()
# Allocator plugins: the interface (README "Bring your own allocator") and the two example plugins.
if(MEMSTRESS_CUDA)
  install(FILES harness/alloc/allocator_plugin.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/memstress)
  install(TARGETS memstress_caching_plugin memstress_cudamalloc_plugin
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/memstress/plugins)
endif()

# What the last real `cmake --install` of this build tree installed first (the binary, as the manifest names
# it): cpack installs too, into a staging directory or under its packaging prefix with DESTDIR, and rewrites the
# same install_manifest.txt; cmake/Uninstall.cmake refuses a manifest without this file rather than remove what
# cpack staged, or files of /usr/local.
install(CODE "
  if(\"\$ENV{DESTDIR}\" STREQUAL \"\" AND NOT CMAKE_INSTALL_PREFIX MATCHES \"/_CPack_Packages/\"
     AND CMAKE_INSTALL_MANIFEST_FILES)
    list(GET CMAKE_INSTALL_MANIFEST_FILES 0 _memstress_first)
    file(WRITE \"${CMAKE_BINARY_DIR}/install_first_file.txt\" \"\${_memstress_first}\")
  endif()")

if(NOT TARGET uninstall)
  add_custom_target(
    uninstall
    COMMAND ${CMAKE_COMMAND} -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt -P
            ${PROJECT_SOURCE_DIR}/cmake/Uninstall.cmake
    COMMENT "Removing what 'cmake --install' installed (install_manifest.txt)")
endif()

set(CPACK_PACKAGE_NAME memstress)
set(CPACK_PACKAGE_VENDOR "memstress")
set(CPACK_PACKAGE_CONTACT "memstress developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_FILE_NAME "memstress-${PROJECT_VERSION}-${CMAKE_SYSTEM_NAME}-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr/local")
set(CPACK_STRIP_FILES OFF)
set(CPACK_GENERATOR TGZ)
find_program(MEMSTRESS_DPKG_DEB dpkg-deb)
if(MEMSTRESS_DPKG_DEB)
  list(APPEND CPACK_GENERATOR DEB)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_SECTION devel)
  # The libraries a DEB needs come from dpkg-shlibdeps (so the sonames are the build machine's); NCCL
  # lives in the CUDA toolkit, which no Debian package owns, so its directory is private to the package
  # and libnccl2 only recommended (NVIDIA's images and packages carry it).
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  get_filename_component(_nccl_dir "${NCCL_LIBRARY}" DIRECTORY)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${_nccl_dir}")
  # `memstress report` draws its plots with matplotlib: a dependency of the package, so that the installed
  # report works on its own.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, python3-matplotlib, openmpi-bin")
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libnccl2")
endif()
include(CPack)
