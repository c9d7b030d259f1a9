# Where installed files go (GNUInstallDirs), the data directory relative to the binary's, which the binary uses to
# find its files, and the directory of its Python relative to the data directory (harness/core/data_dir.hpp).
include(GNUInstallDirs)
if(SKBUILD)
  # The wheel (pyproject.toml, scikit-build-core installs into the wheel's site-packages): the package memstress
  # and memstress_torch.py at the top, as Python finds them; the binary in memstress/_bin/, the libraries it
  # needs beside glibc in memstress/_libs/ and the rest in memstress/_data/ (Note [The wheel], cmake/Wheel.cmake).
  set(MEMSTRESS_BIN_SUBDIR "memstress/_bin")
  set(MEMSTRESS_DATA_SUBDIR "memstress/_data")
  set(MEMSTRESS_DATA_RELDIR "../_data")
  set(MEMSTRESS_PYTHON_RELDIR "../..")
else()
  set(MEMSTRESS_BIN_SUBDIR "${CMAKE_INSTALL_BINDIR}")
  set(MEMSTRESS_DATA_SUBDIR "${CMAKE_INSTALL_DATADIR}/memstress")
  file(RELATIVE_PATH MEMSTRESS_DATA_RELDIR "${CMAKE_INSTALL_FULL_BINDIR}"
       "${CMAKE_INSTALL_PREFIX}/${MEMSTRESS_DATA_SUBDIR}")
  set(MEMSTRESS_PYTHON_RELDIR "python")
endif()
