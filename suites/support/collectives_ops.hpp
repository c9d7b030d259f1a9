#pragma once

// The collectives workload's vocabulary: axis names of the collectives and dtypes, the NCCL call for each
// collective, and the bandwidth figures (collective_values.hpp has the arithmetic they share with the
// kernels).

#include <cuda_runtime_api.h>

#include <span>
#include <string_view>

#include "kernels/collective_values.hpp"

namespace memstress {
class NcclComm;
}

namespace memstress::suites {

std::span<const std::string_view> collective_names() noexcept;
std::span<const std::string_view> dtype_names() noexcept;
// Throw InputError for a name that is not in the lists above.
kernels::Collective parse_collective(std::string_view name);
kernels::DType parse_dtype(std::string_view name);
std::string_view to_string(kernels::Collective c) noexcept;

// Whether NCCL can run `c` in place (alltoall and the sendrecv ring cannot: they would overwrite what
// they still send).
constexpr bool has_in_place(kernels::Collective c) noexcept {
  return c != kernels::Collective::alltoall && c != kernels::Collective::sendrecv;
}

// Enqueues one collective of `layout`'s counts on `stream` (op sum, broadcast from rank 0, sendrecv as
// a ring: to rank + 1, from rank - 1).
void enqueue_collective(kernels::Collective c, kernels::DType type, const kernels::CollectiveLayout& layout,
                        const void* send, void* recv, const NcclComm& comm, cudaStream_t stream);

struct Bandwidth {
  double algbw = 0;  // GB/s: size / time
  double busbw = 0;  // GB/s: algbw x bus_factor
};
// nccl-tests' figures for one collective of `size_bytes` (CollectiveLayout::size_count x element size)
// taking `seconds` on `ranks` ranks.
Bandwidth bandwidth(kernels::Collective c, double size_bytes, double seconds, int ranks) noexcept;

}  // namespace memstress::suites
