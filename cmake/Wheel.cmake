# Note [The wheel]
#
# `pip install .` and `pip wheel .` (pyproject.toml: scikit-build-core runs this CMake with the nocuda preset,
# Note [The build without CUDA] in cmake/HostOnly.cmake) make one wheel for PyTorch users: the binary of the
# host tools and the package memstress, with memstress_torch beside it. Installed into site-packages:
#
#   memstress/                   the package (python/memstress): the recorder, find_max_batch, the converter, the
#                                report; memstress.doctor() (api.py); _launcher.py, the `memstress` command
#   memstress_torch.py           the name PyTorch programs import the recorder by (`python -m memstress_torch`)
#   memstress/_bin/memstress     the binary; its data directory is ../_data and its Python ../.. of that
#                                (cmake/InstallDirs.cmake, Note [Where memstress finds its files])
#   memstress/_data/             profiles/ and results/schema/, as share/memstress/ holds them
#   memstress/_libs/             the shared libraries the binary needs beside glibc, from the machine that built
#                                it (the C++ runtime, fmt, yaml-cpp, SQLite, libcrypto, zlib, liblzma), found
#                                through the binary's run path ($ORIGIN/../_libs), as auditwheel would put them
#
# pip writes `memstress` into the environment's bin/ as a script of the python that installed it, which runs
# memstress._launcher: it names that python to the binary (MEMSTRESS_LAUNCHER_PYTHON) and becomes the binary.
# So `/path/to/venv/bin/memstress doctor run.pickle` works with nothing activated and no PYTHONPATH, and the
# converter and the report run under the python that has the package. The wheel's tag is py3-none-<platform>:
# the binary is no extension module, so one wheel serves every Python 3 from 3.9; its platform is the building
# interpreter's own (linux_x86_64 on Debian 12: glibc 2.36 or newer), never a manylinux tag, which only
# auditwheel's repair in a manylinux image may give. PostgreSQL's client library is left out (its own
# dependencies are many): `memstress db` of the wheel stores on SQLite.
install(TARGETS memstress RUNTIME DESTINATION ${MEMSTRESS_BIN_SUBDIR})
# Each library under the name the binary asks for (its soname), as one file, not the chain of links to it.
install(
  CODE [[
  file(GET_RUNTIME_DEPENDENCIES EXECUTABLES "$<TARGET_FILE:memstress>" RESOLVED_DEPENDENCIES_VAR _ms_libs
       UNRESOLVED_DEPENDENCIES_VAR _ms_missing
       # glibc's own libraries: the system's, whichever it is
       PRE_EXCLUDE_REGEXES "^ld-linux" "^libc[.]so" "^libm[.]so" "^libdl[.]so" "^libpthread[.]so" "^librt[.]so"
                           "^libresolv[.]so" "^libutil[.]so")
  if(_ms_missing)
    message(FATAL_ERROR "the wheel's binary needs libraries that were not found: ${_ms_missing}")
  endif()
  file(MAKE_DIRECTORY "${CMAKE_INSTALL_PREFIX}/memstress/_libs")
  foreach(_ms_lib IN LISTS _ms_libs)
    get_filename_component(_ms_name "${_ms_lib}" NAME)
    message(STATUS "Installing: ${CMAKE_INSTALL_PREFIX}/memstress/_libs/${_ms_name}")
    file(COPY_FILE "${_ms_lib}" "${CMAKE_INSTALL_PREFIX}/memstress/_libs/${_ms_name}")
  endforeach()
  ]])
set_target_properties(memstress PROPERTIES INSTALL_RPATH "$ORIGIN/../_libs")
install(FILES python/memstress_torch.py DESTINATION .)
install(DIRECTORY python/memstress DESTINATION . FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY profiles/ DESTINATION ${MEMSTRESS_DATA_SUBDIR}/profiles FILES_MATCHING PATTERN "*.yaml")
install(DIRECTORY results/schema/ DESTINATION ${MEMSTRESS_DATA_SUBDIR}/results/schema FILES_MATCHING
        PATTERN "*.json")
