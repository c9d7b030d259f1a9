// Fill and check kernels of the collectives workload: grid-stride loops over elements of one of the five
// dtypes, values from collective_values.hpp (small integers, exact in every dtype, so the comparison is
// exact too). Errors are summed per warp and added to the counters with one atomic pair per warp.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/collective_launch.hpp"
#include "kernels/device_loop.cuh"
#include "kernels/launch.hpp"

namespace memstress::kernels::detail {
namespace {

// Conversions between the small integers of the pattern and each dtype (all exact).
template <typename T>
__device__ T from_integer(std::int64_t v) {
  return static_cast<T>(v);
}
template <>
__device__ __half from_integer<__half>(std::int64_t v) {
  return __float2half_rn(static_cast<float>(v));
}
template <>
__device__ __nv_bfloat16 from_integer<__nv_bfloat16>(std::int64_t v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <typename T>
__device__ double to_double(T v) {
  return static_cast<double>(v);
}
template <>
__device__ double to_double<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
__device__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

template <typename T>
__global__ void fill_kernel(T* dst, std::uint64_t count, int rank, std::uint64_t salt,
                            std::uint64_t modulus) {
  for (std::uint64_t k = global_thread(); k < count; k += grid_threads()) {
    dst[k] = from_integer<T>(input_value(rank, k, salt, modulus));
  }
}

template <typename T>
__global__ void check_kernel(const T* src, std::uint64_t count, CollectiveCase c,
                             unsigned long long* counters) {
  std::uint64_t bad = 0;
  std::uint64_t first = ~0ULL;
  for (std::uint64_t k = global_thread(); k < count; k += grid_threads()) {
    // Compared as doubles: exact for every value of every dtype here, and NaN compares unequal.
    if (!(to_double(src[k]) == static_cast<double>(expected_value(c, k)))) {
      ++bad;
      first = k < first ? k : first;
    }
  }
  report_bad(bad, first, counters);
}

template <typename T>
cudaError_t fill_as(void* dst, std::uint64_t count, int rank, std::uint64_t salt, std::uint64_t modulus,
                    unsigned grid, cudaStream_t stream) {
  fill_kernel<T><<<grid, kBlock, 0, stream>>>(static_cast<T*>(dst), count, rank, salt, modulus);
  return cudaGetLastError();
}

template <typename T>
cudaError_t check_as(const void* src, std::uint64_t count, const CollectiveCase& c,
                     unsigned long long* counters, unsigned grid, cudaStream_t stream) {
  check_kernel<T><<<grid, kBlock, 0, stream>>>(static_cast<const T*>(src), count, c, counters);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_collective_fill(void* dst, DType type, std::uint64_t count, int rank, std::uint64_t salt,
                                   std::uint64_t modulus, unsigned grid, cudaStream_t stream) {
  switch (type) {
    case DType::f16:
      return fill_as<__half>(dst, count, rank, salt, modulus, grid, stream);
    case DType::bf16:
      return fill_as<__nv_bfloat16>(dst, count, rank, salt, modulus, grid, stream);
    case DType::i32:
      return fill_as<std::int32_t>(dst, count, rank, salt, modulus, grid, stream);
    case DType::f64:
      return fill_as<double>(dst, count, rank, salt, modulus, grid, stream);
    case DType::f32:
      break;
  }
  return fill_as<float>(dst, count, rank, salt, modulus, grid, stream);
}

cudaError_t launch_collective_check(const void* src, DType type, std::uint64_t count, CollectiveCase c,
                                    unsigned long long* counters, unsigned grid, cudaStream_t stream) {
  switch (type) {
    case DType::f16:
      return check_as<__half>(src, count, c, counters, grid, stream);
    case DType::bf16:
      return check_as<__nv_bfloat16>(src, count, c, counters, grid, stream);
    case DType::i32:
      return check_as<std::int32_t>(src, count, c, counters, grid, stream);
    case DType::f64:
      return check_as<double>(src, count, c, counters, grid, stream);
    case DType::f32:
      break;
  }
  return check_as<float>(src, count, c, counters, grid, stream);
}

}  // namespace memstress::kernels::detail
