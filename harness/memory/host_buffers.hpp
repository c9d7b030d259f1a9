#pragma once

// Host memory that transfers start from or land in, other than pinned blocks from the pinned cache:
// pageable pages (ordinary memory: the driver stages every copy through its own pinned bounce buffers)
// and registered pages (ordinary memory locked in place with cudaHostRegister, as frameworks do with
// buffers they did not allocate). Both are page-aligned, move-only, and touched when made, so that no
// page fault lands inside a timed copy.

#include <cstddef>
#include <memory>

namespace memstress {

class PageableBuffer {
 public:
  PageableBuffer() = default;
  // Throws OutOfMemoryError when the host has no memory for it.
  explicit PageableBuffer(std::size_t bytes);

  [[nodiscard]] void* data() const noexcept { return data_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, Free> data_;
  std::size_t bytes_ = 0;
};

// Pageable memory registered with cudaHostRegister(portable | mapped); unregistered before it is freed.
class RegisteredBuffer {
 public:
  RegisteredBuffer() = default;
  explicit RegisteredBuffer(std::size_t bytes);
  ~RegisteredBuffer();
  RegisteredBuffer(RegisteredBuffer&& other) noexcept;
  RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept;
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  [[nodiscard]] void* data() const noexcept { return pages_.data(); }
  [[nodiscard]] std::size_t size() const noexcept { return pages_.size(); }

 private:
  void unregister() noexcept;
  PageableBuffer pages_;
};

}  // namespace memstress
