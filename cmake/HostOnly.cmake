# Note [The build without CUDA]
#
# The doctor, predict-batch, replay on the simulated device, compare, the report and the fleet store need no
# GPU: their inputs are files (a PyTorch snapshot is a pickle of plain types) and the simulated device hands
# out addresses with no memory behind them. MEMSTRESS_CUDA=OFF (the `nocuda` preset, and the wheel that
# pyproject.toml builds through scikit-build-core) builds exactly those, with no CUDA toolkit, NCCL, MPI,
# NVML or cuBLAS anywhere: CUDA is not a language of the project, none of them is looked for, and nothing
# that needs one is compiled. The rooms stay the rooms of the GPU build (harness/CMakeLists.txt): each
# compiles its host sources always and the sources that reach CUDA, NCCL or MPI only with MEMSTRESS_CUDA
# (dist and burn, the kernels, the suites and the GPU-only commands not at all), and what a host source calls
# of the GPU's half has a stand-in that says this build has none (memory/cuda_unavailable.cpp,
# alloc/cuda_peers_unavailable.cpp, env/environment_host.cpp), as rmm_unavailable.cpp does for the RMM peers.
# No header needs CUDA's: a stream is named by the struct a cudaStream_t points to, declared in
# memory/stream_ref.hpp. The commands that need a GPU are still there, saying that this build lacks them
# (apps/cmd_gpu_unavailable.cpp, exit 3), as `db` does without SQLite.
#
# Without CUDA the tests, the benchmarks and the example plugins are not built: they link the whole harness.
# The host build is tested from the GPU build's tests instead (tests/wheel/): the wheel built, installed and
# run against the GPU build's binary, and its binary's dynamic section read for the libraries it must not
# need.
if(MEMSTRESS_CUDA)
  return()
endif()
foreach(_option MEMSTRESS_FUZZ MEMSTRESS_WITH_TORCH MEMSTRESS_FAULT_HOOKS)
  if(${_option})
    message(FATAL_ERROR "${_option}=ON needs the GPU build: configure without -DMEMSTRESS_CUDA=OFF")
  endif()
endforeach()
set(MEMSTRESS_BUILD_TESTS OFF)
set(MEMSTRESS_BUILD_BENCH OFF)
set(MEMSTRESS_WITH_RMM OFF)
message(STATUS "memstress without CUDA (MEMSTRESS_CUDA=OFF): the host tools only (doctor, predict-batch, replay, "
               "compare, report, db); no tests, benchmarks or plugins")
