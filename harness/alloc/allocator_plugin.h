/* memstress allocator plugins: the interface `--allocator plugin:PATH.so` loads.
 *
 * Required, PyTorch's pluggable-allocator interface (torch.cuda.memory.CUDAPluggableAllocator(path,
 * alloc_fn_name, free_fn_name)), so a library written for PyTorch loads unchanged:
 *
 *   void* ALLOC(ssize_t size, int device, cudaStream_t stream);   NULL when it cannot allocate
 *   void  FREE(void* ptr, ssize_t size, int device, cudaStream_t stream);
 *
 * ALLOC and FREE are `my_malloc` and `my_free` unless named: `plugin:PATH.so:ALLOC:FREE`. memstress calls
 * FREE with the size and device the block was allocated with, and with its stream (or, for a block that
 * record_stream marked as used on other streams too, a stream of memstress's own that has waited for all of
 * them). Both are called from many threads at once: they must be thread-safe.
 *
 * Optional, memstress's own (looked up by these names; a plugin for PyTorch alone need not have them):
 *
 *   void memstress_plugin_bind(int device, const struct memstress_plugin_host* host);
 *       Called before the first ALLOC for `device` with memstress's device memory: a plugin that takes its
 *       memory through host->reserve/host->release instead of cudaMalloc/cudaFree runs on the simulated
 *       device (--device sim:80G, CPU-only machines) as well, and memstress counts its reserved bytes
 *       exactly. Called with NULL when memstress's allocator for `device` goes away: return everything
 *       still cached for `device` through the old host first.
 *   void memstress_plugin_empty_cache(int device);
 *       Return cached, unused memory of `device` (memstress's empty_cache; PyTorch's emptyCache).
 */
#ifndef MEMSTRESS_ALLOCATOR_PLUGIN_H
#define MEMSTRESS_ALLOCATOR_PLUGIN_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MEMSTRESS_PLUGIN_ABI_VERSION 1

typedef void* (*memstress_plugin_alloc_fn)(ssize_t size, int device, cudaStream_t stream);
typedef void (*memstress_plugin_free_fn)(void* ptr, ssize_t size, int device, cudaStream_t stream);

struct memstress_plugin_host {
  int abi_version; /* MEMSTRESS_PLUGIN_ABI_VERSION */
  void* context;   /* pass back as the first argument */
  /* `bytes` of device memory of `device`, 256-byte aligned; NULL when the device is out of memory. */
  void* (*reserve)(void* context, size_t bytes, int device);
  /* Memory from reserve, with the size it was reserved with. */
  void (*release)(void* context, void* ptr, size_t bytes, int device);
};

typedef void (*memstress_plugin_bind_fn)(int device, const struct memstress_plugin_host* host);
typedef void (*memstress_plugin_empty_cache_fn)(int device);

#ifdef __cplusplus
}
#endif

#endif /* MEMSTRESS_ALLOCATOR_PLUGIN_H */
