# Every dependency through find_package; versions are the oldest we build with (Debian 12).
# The GPU build's (without CUDA none of them is looked for: Note [The build without CUDA], cmake/HostOnly.cmake).
if(MEMSTRESS_CUDA)
  find_package(CUDAToolkit 12.4 REQUIRED)
  find_package(NCCL 2.19 REQUIRED) # ncclMemAlloc
  find_package(NVML REQUIRED) # header only: libnvidia-ml is loaded at run time
  find_package(MPI 3.1 REQUIRED COMPONENTS C)
endif()
find_package(CLI11 2.1 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp 0.7 REQUIRED)
# yaml-cpp 0.8 exports yaml-cpp::yaml-cpp; 0.7 (Debian 12) only the bare name.
if(NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
find_package(fmt 9 REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB 1.2.11 REQUIRED) # gzip-compressed traces (harness/trace/trace_file.cpp)
# Host memory placed on each GPU's NUMA node (harness/memory/numa.hpp); a build without hwloc places nothing
# and says so in its results.
if(MEMSTRESS_CUDA)
  find_package(HWLOC 2.0)
endif()
# .xz results files (harness/results/compressed.cpp); a build without liblzma refuses them, saying why.
find_package(LibLZMA)
include(FleetStore) # SQLite and libcrypto, when the fleet store (memstress db) is built
include(Rmm) # librmm, when the rmm-* allocator peers are built
if(MEMSTRESS_BUILD_TESTS)
  find_package(GTest 1.12 REQUIRED)
  include(GoogleTest)
endif()
if(MEMSTRESS_BUILD_BENCH)
  find_package(benchmark 1.7 REQUIRED)
endif()
if(MEMSTRESS_WITH_TORCH)
  find_package(TorchC10 REQUIRED)
endif()
