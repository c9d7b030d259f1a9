#include "harness/memory/backend.hpp"

#include <fmt/format.h>

#include "harness/core/units.hpp"

namespace memstress {

std::string DeviceInfo::label() const {
  return kind == BackendKind::cuda ? fmt::format("cuda:{}", ordinal)
                                   : fmt::format("sim:{}", format_bytes(capacity));
}

}  // namespace memstress
