#pragma once

// Host API of the collectives' fill and check kernels (values: collective_values.hpp). Both only enqueue:
// the caller waits for the stream (through NcclComm::wait when NCCL work is on it) before reading a result.

#include <cuda_runtime_api.h>

#include <cstdint>

#include "harness/memory/cuda_handles.hpp"
#include "kernels/collective_values.hpp"
#include "kernels/pattern.hpp"

namespace memstress::kernels {

// Enqueues dst[k] = input_value(rank, k, salt, modulus) for k < count, as `type`.
void fill_collective_input(void* dst, DType type, std::uint64_t count, int rank, std::uint64_t salt,
                           std::uint64_t modulus, cudaStream_t stream);

// One check in flight at a time: counters on the device, the result copied back to pinned memory.
class CollectiveChecker {
 public:
  CollectiveChecker();
  // Enqueues the comparison of count elements at `src` with expected_value(c, k), and the copy-back.
  void enqueue(const void* src, DType type, std::uint64_t count, const CollectiveCase& c,
               cudaStream_t stream);
  // The last enqueue's result (checked_words counts elements); valid once the caller has waited for the
  // stream it was enqueued on.
  [[nodiscard]] CheckResult result() const;

 private:
  cuda::DeviceBuffer counters_;  // {bad elements, first bad index}
  cuda::PinnedBuffer result_;    // the same, copied back
  std::uint64_t checked_ = 0;
};

}  // namespace memstress::kernels
