#include "suites/support/collectives_ops.hpp"

#include <fmt/format.h>
#include <nccl.h>

#include <array>

#include "harness/core/error.hpp"
#include "harness/core/nccl_check.hpp"
#include "harness/core/units.hpp"
#include "harness/dist/nccl_comm.hpp"

namespace memstress::suites {
namespace {

using kernels::Collective;
using kernels::DType;

// In the order of the enums.
constexpr std::array<std::string_view, 6> kCollectives{"all_reduce", "all_gather", "reduce_scatter",
                                                       "broadcast",  "alltoall",   "sendrecv"};
constexpr std::array<std::string_view, 5> kDTypes{"float", "half", "bfloat16", "int32", "double"};

ncclDataType_t nccl_type(DType t) noexcept {
  switch (t) {
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i32:
      return ncclInt32;
    case DType::f64:
      return ncclFloat64;
    case DType::f32:
      break;
  }
  return ncclFloat32;
}

}  // namespace

std::span<const std::string_view> collective_names() noexcept {
  return kCollectives;
}

std::span<const std::string_view> dtype_names() noexcept {
  return kDTypes;
}

Collective parse_collective(std::string_view name) {
  for (std::size_t i = 0; i < kCollectives.size(); ++i) {
    if (kCollectives[i] == name) {
      return static_cast<Collective>(i);
    }
  }
  throw InputError(fmt::format("unknown collective '{}'", name));
}

DType parse_dtype(std::string_view name) {
  for (std::size_t i = 0; i < kDTypes.size(); ++i) {
    if (kDTypes[i] == name) {
      return static_cast<DType>(i);
    }
  }
  throw InputError(fmt::format("unknown dtype '{}'", name));
}

std::string_view to_string(Collective c) noexcept {
  return kCollectives.at(static_cast<std::size_t>(c));
}

void enqueue_collective(Collective c, DType type, const kernels::CollectiveLayout& layout, const void* send,
                        void* recv, const NcclComm& comm, cudaStream_t stream) {
  const ncclDataType_t t = nccl_type(type);
  ncclComm_t nc = comm.get();
  switch (c) {
    case Collective::all_reduce:
      MEMSTRESS_NCCL_TRY(ncclAllReduce(send, recv, layout.recv_count, t, ncclSum, nc, stream));
      return;
    case Collective::all_gather:
      MEMSTRESS_NCCL_TRY(ncclAllGather(send, recv, layout.send_count, t, nc, stream));
      return;
    case Collective::reduce_scatter:
      MEMSTRESS_NCCL_TRY(ncclReduceScatter(send, recv, layout.recv_count, t, ncclSum, nc, stream));
      return;
    case Collective::broadcast:
      MEMSTRESS_NCCL_TRY(ncclBroadcast(send, recv, layout.recv_count, t, 0, nc, stream));
      return;
    case Collective::alltoall:
      MEMSTRESS_NCCL_TRY(ncclAlltoAll(send, recv, layout.chunk, t, nc, stream));
      return;
    case Collective::sendrecv: {
      const int n = comm.size();
      const int r = comm.rank();
      MEMSTRESS_NCCL_TRY(ncclGroupStart());
      const ncclResult_t sent = ncclSend(send, layout.send_count, t, (r + 1) % n, nc, stream);
      const ncclResult_t received = ncclRecv(recv, layout.recv_count, t, (r + n - 1) % n, nc, stream);
      MEMSTRESS_NCCL_TRY(ncclGroupEnd());  // always closes the group, also after a failed call in it
      MEMSTRESS_NCCL_TRY(sent);
      MEMSTRESS_NCCL_TRY(received);
      return;
    }
  }
}

Bandwidth bandwidth(Collective c, double size_bytes, double seconds, int ranks) noexcept {
  const double algbw = gb_per_s(size_bytes, seconds);
  return {algbw, algbw * kernels::bus_factor(c, ranks)};
}

}  // namespace memstress::suites
