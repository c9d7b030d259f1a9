// The smallest allocator plugin, PyTorch's own documentation example: cudaMalloc and cudaFree behind
// PyTorch's pluggable-allocator interface (my_malloc / my_free), with none of memstress's optional hooks.
// A library written for PyTorch alone looks like this; memstress loads it unchanged
// (`--allocator plugin:libmemstress_cudamalloc_plugin.so`) on a real GPU, and estimates its reserved bytes
// from the device's used memory (harness/alloc/plugin_allocator.cpp).

#include <cuda_runtime_api.h>
#include <sys/types.h>

extern "C" {

__attribute__((visibility("default"))) void* my_malloc(ssize_t size, int device, cudaStream_t /*stream*/) {
  int previous = 0;
  void* ptr = nullptr;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    return nullptr;
  }
  if (cudaMalloc(&ptr, static_cast<size_t>(size)) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    ptr = nullptr;
  }
  static_cast<void>(cudaSetDevice(previous));
  return ptr;
}

__attribute__((visibility("default"))) void my_free(void* ptr, ssize_t /*size*/, int /*device*/,
                                                    cudaStream_t /*stream*/) {
  static_cast<void>(cudaFree(ptr));
}

}  // extern "C"
