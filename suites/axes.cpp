// The axes of the workloads the fuzz target of the plan plans against (Note [The axes in one place],
// suites/axes.hpp): CUDA-free, read by those workloads' definitions and by fuzz/plan_registry.hpp.

#include "suites/axes.hpp"

#include <string>

namespace memstress::suites::axes {

std::vector<ParamSpec> alloc_smoke() {
  return {
      {.name = "bytes",
       .type = ParamType::bytes,
       .defaults = {"1M", "64M", "1G"},
       .full_defaults = {"512", "1M", "64M", "1G"},
       .minimum = 1,
       .help = "buffer size"},
      {.name = "count",
       .type = ParamType::integer,
       .defaults = {"16"},
       .full_defaults = {"16", "64"},
       .minimum = 1,
       .maximum = 1'000'000,
       .help = "buffers live at once"},
  };
}

std::vector<ParamSpec> transfers() {
  return {
      {.name = "direction",
       .type = ParamType::choice,
       .defaults = {"h2d", "d2h", "bidir", "d2d"},
       .choices = {"h2d", "d2h", "bidir", "d2d"},
       .help = "copy direction (bidir: H2D and D2H at once)"},
      {.name = "host",
       .type = ParamType::choice,
       .defaults = {"pinned", "pageable"},
       .full_defaults = {"pinned", "pageable", "registered"},
       .choices = {"pinned", "pageable", "registered"},
       .help = "host memory: the pinned cache, ordinary pages, or cudaHostRegister'ed pages (not "
               "used by d2d)"},
      {.name = "engine",
       .type = ParamType::choice,
       .defaults = {"ce"},
       .full_defaults = {"ce", "sm"},
       .choices = {"ce", "sm"},
       .help = "ce: cudaMemcpyAsync (copy engines); sm: a copy kernel"},
      {.name = "streams",
       .type = ParamType::integer,
       .defaults = {"1"},
       .full_defaults = {"1", "4"},
       .minimum = 1,
       .maximum = kMaxTransferStreams,
       .help = "streams the copy is split over"},
      {.name = "bytes",
       .type = ParamType::bytes,
       .defaults = {"1M", "256M"},
       .full_defaults = {"4K", "64K", "1M", "16M", "256M", "1G"},
       .minimum = 16,
       .help = "copy size"},
  };
}

bool transfers_applies(const ParamSet& p) {
  const std::string& direction = p.text("direction");
  const std::string& host = p.text("host");
  if (direction == "d2d") {
    return host == "pinned";  // host memory plays no part: one case, not three
  }
  return !(host == "pageable" && p.text("engine") == "sm");  // a kernel cannot read pageable memory
}

std::vector<ParamSpec> integrity() {
  return {
      {.name = "fraction",
       .type = ParamType::real,
       .defaults = {"0.95"},
       .full_defaults = {"0.98"},
       .minimum = 0.01,
       .maximum = 0.99,
       .help = "share of free memory tested"},
      {.name = "patterns",
       .type = ParamType::text,
       .defaults = {"random+checkerboard+walking_ones+walking_zeros+address"},
       .help = "patterns, joined by +, each over all blocks"},
      {.name = "inversions",
       .type = ParamType::boolean,
       .defaults = {"true"},
       .help = "after each fill, moving inversions: the complement written going up the blocks, the "
               "pattern going down, each word compared before it is rewritten"},
      {.name = "block",
       .type = ParamType::bytes,
       .defaults = {"1G"},
       .minimum = 1 << 20,
       .help = "block size (the allocation unit tested)"},
  };
}

std::vector<ParamSpec> nccl_memory() {
  return {
      {.name = "channels",
       .type = ParamType::integer,
       .defaults = {"0"},
       .full_defaults = {"0", "2", "8", "32"},
       .minimum = 0,
       .maximum = 64,
       .help = "NCCL channels, pinned with ncclConfig_t minCTAs = maxCTAs (0: NCCL's choice)"},
      {.name = "cycles",
       .type = ParamType::integer,
       .defaults = {"3"},
       .full_defaults = {"100"},
       .minimum = 0,
       .maximum = 10000,
       .help = "communicators created, used and destroyed after the first to check that nothing is "
               "left behind"},
      {.name = "bytes",
       .type = ParamType::bytes,
       .defaults = {"4M"},
       .minimum = 1,
       .help = "the size of each first collective (nccl-tests' size)"},
  };
}

}  // namespace memstress::suites::axes
