#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "harness/alloc/allocator.hpp"

namespace memstress {

// The allocator names --allocator accepts, in the order `memstress list` shows them.
std::span<const std::string_view> allocator_names() noexcept;

// Builds the named allocator over `backend`. Throws InputError naming --allocator for an unknown name.
std::unique_ptr<Allocator> make_allocator(std::string_view name, DeviceBackend& backend);

}  // namespace memstress
