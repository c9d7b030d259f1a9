#pragma once

#include <string>

namespace memstress {

// The command's flags that gave an allocator, as the command spells them (a library names no flag of its
// own): the errors name them, and so does the advice where a peer cannot run here (another allocator, a GPU).
struct AllocatorFlags {
  std::string name{};    // the peer (memstress run's --allocator)
  std::string conf{};    // its settings (--alloc-conf)
  std::string trace{};   // the trace file (--alloc-trace)
  std::string device{};  // the device (--device)
};

}  // namespace memstress
