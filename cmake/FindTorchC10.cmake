# FindTorchC10: PyTorch's c10 and c10_cuda libraries and headers, from the python3 that has torch
# (the GPU images have PyTorch 2.11). Only what the `torch` allocator peer needs: not the whole of
# TorchConfig.cmake, which pulls in its own CUDA detection. Provides TorchC10::c10_cuda.
include(FindPackageHandleStandardArgs)

if(NOT TorchC10_ROOT)
  find_package(Python3 QUIET COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c "import os, torch; print(os.path.dirname(torch.__file__))"
      OUTPUT_VARIABLE TorchC10_ROOT
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
endif()

find_path(
  TorchC10_INCLUDE_DIR c10/cuda/CUDACachingAllocator.h
  HINTS ${TorchC10_ROOT}
  PATH_SUFFIXES include
  NO_DEFAULT_PATH)
find_library(
  TorchC10_c10_LIBRARY c10
  HINTS ${TorchC10_ROOT}
  PATH_SUFFIXES lib
  NO_DEFAULT_PATH)
find_library(
  TorchC10_c10_cuda_LIBRARY c10_cuda
  HINTS ${TorchC10_ROOT}
  PATH_SUFFIXES lib
  NO_DEFAULT_PATH)

find_package_handle_standard_args(TorchC10 REQUIRED_VARS TorchC10_INCLUDE_DIR TorchC10_c10_LIBRARY
                                                         TorchC10_c10_cuda_LIBRARY)

# The headers are a target of their own: torch/include carries its own copy of fmt (a newer major
# version), which must reach only the one file that includes c10, never the rest of memstress.
if(TorchC10_FOUND AND NOT TARGET TorchC10::c10_cuda)
  add_library(TorchC10::headers INTERFACE IMPORTED)
  set_target_properties(TorchC10::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${TorchC10_INCLUDE_DIR}")
  add_library(TorchC10::c10 SHARED IMPORTED)
  set_target_properties(TorchC10::c10 PROPERTIES IMPORTED_LOCATION "${TorchC10_c10_LIBRARY}")
  add_library(TorchC10::c10_cuda SHARED IMPORTED)
  set_target_properties(TorchC10::c10_cuda PROPERTIES IMPORTED_LOCATION "${TorchC10_c10_cuda_LIBRARY}"
                                                      INTERFACE_LINK_LIBRARIES TorchC10::c10)
endif()
mark_as_advanced(TorchC10_INCLUDE_DIR TorchC10_c10_LIBRARY TorchC10_c10_cuda_LIBRARY)
