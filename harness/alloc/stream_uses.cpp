#include "harness/alloc/stream_uses.hpp"

#include <algorithm>

#include "harness/core/cuda_check.hpp"
#include "harness/memory/cuda_handles.hpp"

namespace memstress {

StreamRef StreamUses::free_stream(cudaStream_t joined) const {
  if (others_.empty()) {
    return own_;
  }
  const auto wait_for = [joined](StreamRef use) {
    const cuda::Event reached(cuda::Event::Timing::disabled);  // destroying it after the wait is fine
    reached.record(use.cuda());
    MEMSTRESS_CUDA_TRY(cudaStreamWaitEvent(joined, reached.get(), 0));
  };
  wait_for(own_);
  std::for_each(others_.begin(), others_.end(), wait_for);
  return StreamRef::from(joined);
}

}  // namespace memstress
