#include "suites/blocks.hpp"

#include <cstdio>
#include <exception>

namespace memstress::suites {
namespace {

template <typename Alloc>
void give_back(Alloc* allocator, void*& data) noexcept {
  if (data == nullptr) {
    return;
  }
  try {
    allocator->deallocate(data);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memstress: freeing a block failed: %s\n", e.what());
  }
  data = nullptr;
}

}  // namespace

void DeviceBlock::reset() noexcept {
  give_back(allocator_, data_);
  bytes_ = 0;
}

void HostBlock::reset() noexcept {
  give_back(allocator_, data_);
  bytes_ = 0;
}

}  // namespace memstress::suites
