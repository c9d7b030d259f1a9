#include "harness/alloc/factory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "harness/alloc/direct_allocator.hpp"
#include "harness/core/error.hpp"

namespace memstress {
namespace {
constexpr std::array<std::string_view, 1> kNames{"direct"};
}  // namespace

std::span<const std::string_view> allocator_names() noexcept {
  return kNames;
}

std::unique_ptr<Allocator> make_allocator(std::string_view name, DeviceBackend& backend) {
  if (name == "direct") {
    return std::make_unique<DirectAllocator>(backend);
  }
  throw InputError(
      fmt::format("--allocator '{}': unknown allocator; choose one of: {}", name, fmt::join(kNames, ", ")));
}

}  // namespace memstress
