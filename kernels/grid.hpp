#pragma once

// Internal to kernels/: grid sizes for grid-stride loops, and argument checks shared by the host APIs.

#include <cstdint>
#include <string_view>

namespace memstress::kernels::detail {

// Blocks of kBlock threads for a grid-stride loop over `items`: enough to fill the current device (8 per
// SM), no more.
[[nodiscard]] unsigned grid_for(std::uint64_t items);

// Throws InputError naming `what` unless `ptr` is 16-byte aligned (the kernels' vector width).
void require_alignment(const void* ptr, std::string_view what);

}  // namespace memstress::kernels::detail
