#pragma once

// Move-only RAII owners for the CUDA runtime handles memstress uses directly. Destructors never throw:
// they report a failed release on stderr (MEMSTRESS_CUDA_WARN) and carry on.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace memstress::cuda {

// Makes `device` current for the scope and, on exit, makes the previous device current again where the
// thread had a context current before (Note [No context on a GPU nobody chose], cuda_handles.cpp).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  ScopedDevice(ScopedDevice&&) = delete;
  ScopedDevice& operator=(ScopedDevice&&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
  bool restore_ = false;
};

// Leaves the GPUs' primary contexts as it found them: on leaving the scope, each visible GPU whose primary
// context this process had not made active when the scope began, and that is active now, has it torn down
// again (cudaDeviceReset on that device: this process's context alone, never the GPU). For work that
// reaches GPUs other than the rank's own (the p2p matrix): without it the rank kept a context on each of
// them for the rest of the run, and every other rank's GPU showed one more process (its health check
// counts them). Everything made on those GPUs inside the scope must be gone by then: declare it after.
class PrimaryContextsAsFound {
 public:
  PrimaryContextsAsFound();
  ~PrimaryContextsAsFound();
  PrimaryContextsAsFound(const PrimaryContextsAsFound&) = delete;
  PrimaryContextsAsFound& operator=(const PrimaryContextsAsFound&) = delete;
  PrimaryContextsAsFound(PrimaryContextsAsFound&&) = delete;
  PrimaryContextsAsFound& operator=(PrimaryContextsAsFound&&) = delete;

 private:
  std::vector<int> inactive_;  // devices whose primary context was not active at the start
};

// A non-blocking stream (it does not synchronize with the legacy default stream).
class Stream {
 public:
  Stream();
  explicit Stream(int priority);
  ~Stream();
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  enum class Timing : bool { disabled = false, enabled = true };
  explicit Event(Timing timing = Timing::enabled);
  ~Event();
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }
  void record(cudaStream_t stream) const;
  void synchronize() const;
  [[nodiscard]] bool query() const;  // true once the work before the record has completed
  // Milliseconds between two recorded, completed events.
  [[nodiscard]] static float elapsed_ms(const Event& start, const Event& stop);

 private:
  cudaEvent_t event_ = nullptr;
};

// Device memory straight from cudaMalloc, for kernels' scratch and tests; workloads allocate through
// the shared allocator instead.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory from cudaHostAlloc (portable and mapped, so kernels may read it too).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] void* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return bytes_; }
  template <typename T>
  [[nodiscard]] std::span<T> as() const noexcept {
    return {static_cast<T*>(data_), bytes_ / sizeof(T)};
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Number of CUDA devices usable by this process; 0 (not an error) when there is no driver or no GPU.
int device_count() noexcept;

// Whether `device`'s primary context is active in this process (cuDevicePrimaryCtxGetState); nothing where
// the driver cannot say (an entry point it lacks, an error).
[[nodiscard]] std::optional<bool> primary_context_active(int device);

}  // namespace memstress::cuda
