#pragma once

// The streams one allocation is used on (its own, and those record_stream added), and where its free must
// go so that the memory is reused only after all of them reach that point: on its own stream when it was
// used nowhere else, else on a stream of the allocator's own made to wait (through events) for each of
// them (PyTorch's "unifying free stream": no caller's stream is made to wait for another's work). Shared by
// the peers that free in stream order and keep no pending-free list of their own (async, rmm-*, plugin).

#include <algorithm>
#include <vector>

#include "harness/memory/stream_ref.hpp"

namespace memstress {

class StreamUses {
 public:
  StreamUses() = default;
  explicit StreamUses(StreamRef own) : own_(own) {}

  [[nodiscard]] StreamRef own() const noexcept { return own_; }
  // Records a use on `stream` (the own stream and repeats are ignored).
  void add(StreamRef stream) {
    if (stream != own_ && std::find(others_.begin(), others_.end(), stream) == others_.end()) {
      others_.push_back(stream);
    }
  }
  // The stream to free on: own() when no other stream used it, else `joined` (a cudaStream_t) after it was
  // made to wait for every stream's work enqueued so far (needs a real GPU; throws ApiError; stream_uses.cpp,
  // in the GPU build only).
  [[nodiscard]] StreamRef free_stream(CUstream_st* joined) const;

 private:
  StreamRef own_;
  std::vector<StreamRef> others_;
};

}  // namespace memstress
