#pragma once

// The collectives' arithmetic, shared by the host (unit tests, buffer sizes, bandwidth) and the device
// (fill and check kernels): plain constexpr functions with no library behind them, so nvcc and the host
// compiler see the same code.
//
// Note [Sizes, as nccl-tests counts them]. A case's `bytes` is nccl-tests' "size" column: the larger of the
// send and receive buffers of one rank. `count` = bytes / element size elements; for all_gather,
// reduce_scatter and alltoall it is rounded down to a multiple of the rank count and `chunk` = count / n is
// what one rank contributes (all_gather), receives (reduce_scatter) or exchanges with each peer (alltoall).
// algbw = size / time and busbw = algbw x bus_factor (nccl-tests' PERFORMANCE.md): all_reduce 2(n-1)/n,
// all_gather, reduce_scatter and alltoall (n-1)/n, broadcast and sendrecv 1.
//
// Note [Values that every dtype holds exactly]. Element k of rank r's input is
// 1 + (k + 3r + salt) mod m: a small positive integer (0 never occurs, so a result that was not written
// is caught). For the sums (all_reduce, reduce_scatter) m = clamp(256 / n, 1, 8), so a sum over n ranks is
// at most 256 and exact in bfloat16 (8 significant bits), half, float, double and int32 alike; the other
// collectives only move values, m = 251. `salt` changes with every repetition, so a stale result from the
// repetition before is caught too. Exactness needs n <= 256 for the sums.

#include <cstdint>

#ifndef MEMSTRESS_HD  // as in pattern_word.hpp
#if defined(__CUDACC__)
#define MEMSTRESS_HD __host__ __device__
#else
#define MEMSTRESS_HD
#endif
#endif

namespace memstress::kernels {

enum class Collective : int { all_reduce, all_gather, reduce_scatter, broadcast, alltoall, sendrecv };
enum class DType : int { f32, f16, bf16, i32, f64 };

MEMSTRESS_HD constexpr std::uint64_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::f64:
      return 8;
    case DType::f32:
    case DType::i32:
      break;
  }
  return 4;
}

MEMSTRESS_HD constexpr bool is_reduction(Collective c) noexcept {
  return c == Collective::all_reduce || c == Collective::reduce_scatter;
}

// Element counts of one rank's buffers (Note [Sizes, as nccl-tests counts them]).
struct CollectiveLayout {
  std::uint64_t send_count = 0;  // elements in the send buffer
  std::uint64_t recv_count = 0;  // elements in the receive buffer
  std::uint64_t chunk = 0;       // per-rank part (all_gather, reduce_scatter, alltoall); else = count
  // In place: the send buffer is the receive buffer plus this many elements (all_gather: rank x chunk),
  // or the receive buffer is the send buffer plus this many (reduce_scatter: rank x chunk).
  std::uint64_t in_place_offset = 0;
  [[nodiscard]] MEMSTRESS_HD constexpr std::uint64_t size_count() const noexcept {
    return send_count > recv_count ? send_count : recv_count;
  }
};

MEMSTRESS_HD constexpr CollectiveLayout collective_layout(Collective c, std::uint64_t bytes, DType t,
                                                          int ranks, int rank) noexcept {
  const std::uint64_t count = bytes / dtype_size(t);
  const auto n = static_cast<std::uint64_t>(ranks < 1 ? 1 : ranks);
  const std::uint64_t chunk = count / n;
  const auto r = static_cast<std::uint64_t>(rank);
  switch (c) {
    case Collective::all_gather:
      return {chunk, chunk * n, chunk, r * chunk};
    case Collective::reduce_scatter:
      return {chunk * n, chunk, chunk, r * chunk};
    case Collective::alltoall:
      return {chunk * n, chunk * n, chunk, 0};
    case Collective::all_reduce:
    case Collective::broadcast:
    case Collective::sendrecv:
      break;
  }
  return {count, count, count, 0};
}

// nccl-tests' bus bandwidth factor for `ranks` ranks.
MEMSTRESS_HD constexpr double bus_factor(Collective c, int ranks) noexcept {
  const double n = ranks < 1 ? 1.0 : static_cast<double>(ranks);
  switch (c) {
    case Collective::all_reduce:
      return 2.0 * (n - 1.0) / n;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::alltoall:
      return (n - 1.0) / n;
    case Collective::broadcast:
    case Collective::sendrecv:
      break;
  }
  return 1.0;
}

// The modulus m of Note [Values that every dtype holds exactly].
MEMSTRESS_HD constexpr std::uint64_t value_modulus(Collective c, int ranks) noexcept {
  if (!is_reduction(c)) {
    return 251;
  }
  const std::uint64_t m = 256 / static_cast<std::uint64_t>(ranks < 1 ? 1 : ranks);
  return m < 1 ? 1 : (m > 8 ? 8 : m);
}

// Element `k` of rank `rank`'s input.
MEMSTRESS_HD constexpr std::int64_t input_value(int rank, std::uint64_t k, std::uint64_t salt,
                                                std::uint64_t modulus) noexcept {
  return 1 + static_cast<std::int64_t>((k + 3 * static_cast<std::uint64_t>(rank) + salt) % modulus);
}

// What one check needs to know besides the element index.
struct CollectiveCase {
  Collective collective = Collective::all_reduce;
  int ranks = 1;
  int rank = 0;
  std::uint64_t chunk = 0;  // CollectiveLayout::chunk
  std::uint64_t salt = 0;
  std::uint64_t modulus = 1;
};

// Element `k` of rank c.rank's receive buffer after the collective (broadcast from root 0; sendrecv: a
// ring, each rank sending to rank + 1 and receiving from rank - 1).
MEMSTRESS_HD constexpr std::int64_t expected_value(const CollectiveCase& c, std::uint64_t k) noexcept {
  const std::uint64_t chunk = c.chunk == 0 ? 1 : c.chunk;
  switch (c.collective) {
    case Collective::all_reduce: {
      std::int64_t sum = 0;
      for (int q = 0; q < c.ranks; ++q) {
        sum += input_value(q, k, c.salt, c.modulus);
      }
      return sum;
    }
    case Collective::reduce_scatter: {
      std::int64_t sum = 0;
      for (int q = 0; q < c.ranks; ++q) {
        sum += input_value(q, static_cast<std::uint64_t>(c.rank) * chunk + k, c.salt, c.modulus);
      }
      return sum;
    }
    case Collective::all_gather:
      return input_value(static_cast<int>(k / chunk), k % chunk, c.salt, c.modulus);
    case Collective::alltoall:
      return input_value(static_cast<int>(k / chunk), static_cast<std::uint64_t>(c.rank) * chunk + k % chunk,
                         c.salt, c.modulus);
    case Collective::broadcast:
      return input_value(0, k, c.salt, c.modulus);
    case Collective::sendrecv:
      return input_value((c.rank + c.ranks - 1) % c.ranks, k, c.salt, c.modulus);
  }
  return 0;
}

}  // namespace memstress::kernels
