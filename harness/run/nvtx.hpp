#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace memstress {

// An NVTX range for the scope, so Nsight Systems timelines show each case. NVTX is header-only and a
// no-op unless a profiler is attached.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) noexcept { nvtxRangePushA(name.c_str()); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
  NvtxRange(NvtxRange&&) = delete;
  NvtxRange& operator=(NvtxRange&&) = delete;
};

}  // namespace memstress
