# FindNVML: locates nvml.h only. memstress loads libnvidia-ml.so.1 at run time (dlopen) so that one
# binary starts on machines without an NVIDIA driver; the header supplies the declarations.
# Searched: NVML_ROOT, the CUDA toolkit, and the PyPI package nvidia-nvml-dev installed by scripts/setup
# into the project's .venv. Provides NVML::headers.
include(FindPackageHandleStandardArgs)

file(GLOB _nvml_venv_dirs "${PROJECT_SOURCE_DIR}/.venv/lib/python3*/site-packages/nvidia/cu*/include")
set(_nvml_hints ${NVML_ROOT} $ENV{NVML_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${_nvml_venv_dirs})

find_path(
  NVML_INCLUDE_DIR nvml.h
  HINTS ${_nvml_hints}
  PATH_SUFFIXES include)

find_package_handle_standard_args(NVML REQUIRED_VARS NVML_INCLUDE_DIR)

if(NVML_FOUND AND NOT TARGET NVML::headers)
  add_library(NVML::headers INTERFACE IMPORTED)
  set_target_properties(NVML::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${NVML_INCLUDE_DIR}")
endif()
mark_as_advanced(NVML_INCLUDE_DIR)
