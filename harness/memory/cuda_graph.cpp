#include "harness/memory/cuda_graph.hpp"

#include "harness/core/cuda_check.hpp"

namespace memstress::cuda {

CapturedGraph::CapturedGraph(cudaStream_t stream, const std::function<void()>& enqueue) {
  MEMSTRESS_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    MEMSTRESS_CUDA_WARN(cudaStreamEndCapture(stream, &partial));
    if (partial != nullptr) {
      MEMSTRESS_CUDA_WARN(cudaGraphDestroy(partial));
    }
    throw;
  }
  MEMSTRESS_CUDA_TRY(cudaStreamEndCapture(stream, &graph_));
  const cudaError_t made = cudaGraphInstantiate(&exec_, graph_, 0);
  if (made != cudaSuccess) {
    MEMSTRESS_CUDA_WARN(cudaGraphDestroy(graph_));  // the destructor does not run for a throwing constructor
    graph_ = nullptr;
    MEMSTRESS_CUDA_TRY(made);
  }
}

CapturedGraph::~CapturedGraph() {
  if (exec_ != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaGraphExecDestroy(exec_));
  }
  if (graph_ != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaGraphDestroy(graph_));
  }
}

CapturedGraph& CapturedGraph::operator=(CapturedGraph&& other) noexcept {
  if (this != &other) {
    CapturedGraph old(std::move(*this));
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

void CapturedGraph::launch(cudaStream_t stream) const {
  MEMSTRESS_CUDA_TRY(cudaGraphLaunch(exec_, stream));
}

}  // namespace memstress::cuda
