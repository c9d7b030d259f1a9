#pragma once

// A CUDA graph captured from the work a function enqueues on a stream, and its executable instance
// (RAII for both, move-only). Capture is thread-local (cudaStreamCaptureModeThreadLocal), as nccl-tests
// captures NCCL collectives: NCCL may connect peers (and allocate) during the capture.

#include <cuda_runtime_api.h>

#include <functional>
#include <utility>

namespace memstress::cuda {

class CapturedGraph {
 public:
  CapturedGraph() = default;
  // Captures what `enqueue` puts on `stream`; if it throws, the capture is ended and discarded first.
  CapturedGraph(cudaStream_t stream, const std::function<void()>& enqueue);
  ~CapturedGraph();
  CapturedGraph(CapturedGraph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
  CapturedGraph& operator=(CapturedGraph&& other) noexcept;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  [[nodiscard]] bool empty() const noexcept { return exec_ == nullptr; }
  void launch(cudaStream_t stream) const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace memstress::cuda
