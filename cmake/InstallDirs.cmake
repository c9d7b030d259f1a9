# Where installed files go (GNUInstallDirs), and the data directory relative to the binary's, which the
# binary uses to find its files (harness/core/data_dir.hpp).
include(GNUInstallDirs)
set(MEMSTRESS_DATA_SUBDIR "${CMAKE_INSTALL_DATADIR}/memstress")
file(RELATIVE_PATH MEMSTRESS_DATA_RELDIR "${CMAKE_INSTALL_FULL_BINDIR}"
     "${CMAKE_INSTALL_PREFIX}/${MEMSTRESS_DATA_SUBDIR}")
