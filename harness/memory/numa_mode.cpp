// What both builds of Note [Host memory near the GPU] share: the flag's values and the record.
#include <fmt/format.h>

#include "harness/core/error.hpp"
#include "harness/memory/numa.hpp"

namespace memstress {

NumaMode parse_numa_mode(std::string_view text, std::string_view flag) {
  if (text == "local") {
    return NumaMode::local;
  }
  if (text == "off") {
    return NumaMode::off;
  }
  throw InputError(
      fmt::format("{} {}: expected local (host memory on the GPU's NUMA node) or off", flag, text));
}

nlohmann::json to_json(const NumaPlacement& placement) {
  nlohmann::json out = {{"mode", placement.mode == NumaMode::local ? "local" : "off"},
                        {"host_nodes", placement.host_nodes},
                        {"gpu_nodes", placement.gpu_nodes},
                        {"memory_placed", placement.memory_placed},
                        {"cpus", placement.cpus},
                        {"cpu_nodes", placement.cpu_nodes}};
  if (!placement.note.empty()) {
    out["note"] = placement.note;
  }
  return out;
}

}  // namespace memstress
