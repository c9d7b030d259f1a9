#include "harness/memory/cuda_handles.hpp"

#include <optional>

#include "harness/core/cuda_check.hpp"
#include "harness/memory/driver_api.hpp"

namespace memstress::cuda {
namespace {

// Note [No context on a GPU nobody chose]. Since CUDA 12, making a device current (cudaSetDevice) creates
// its primary context. A thread's current device is cuda:0 until someone chooses, so putting back "the
// device that was current" after working on cuda:N created a context on cuda:0 whenever the thread had not
// used a GPU yet: in an mpirun job every rank held one there (520 MiB each on an H200: rank 0's GPU had three
// other processes and 1.1% less memory to test, results/h200x4/faults-580.159.04/), and so did every worker
// thread that made its device current. So the previous device is put back only where the thread had a
// context current when the scope began (cuCtxGetCurrent: the thread's own state); otherwise the thread stays
// on the device it worked on.
bool has_current_context() {
  const auto current = driver_api().ctx_get_current;
  CUcontext context = nullptr;
  // Without the entry point, put back as before (the context may then be made).
  return current == nullptr || current(&context) != CUDA_SUCCESS || context != nullptr;
}

}  // namespace

ScopedDevice::ScopedDevice(int device) : restore_(has_current_context()) {
  MEMSTRESS_CUDA_TRY(cudaGetDevice(&previous_));
  if (previous_ != device) {
    MEMSTRESS_CUDA_TRY(cudaSetDevice(device));
    changed_ = true;
  }
}

ScopedDevice::~ScopedDevice() {
  if (changed_ && restore_) {
    MEMSTRESS_CUDA_WARN(cudaSetDevice(previous_));
  }
}

std::optional<bool> primary_context_active(int device) {
  const auto state = driver_api().device_primary_ctx_get_state;
  unsigned flags = 0;
  int active = 0;
  if (state == nullptr || state(static_cast<CUdevice>(device), &flags, &active) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  return active != 0;
}

PrimaryContextsAsFound::PrimaryContextsAsFound() {
  for (int d = 0; d < device_count(); ++d) {
    if (primary_context_active(d) == false) {
      inactive_.push_back(d);
    }
  }
}

PrimaryContextsAsFound::~PrimaryContextsAsFound() {
  for (const int d : inactive_) {
    if (primary_context_active(d) == true) {
      const ScopedDevice on(d);
      MEMSTRESS_CUDA_WARN(cudaDeviceReset());
    }
  }
}

Stream::Stream() {
  MEMSTRESS_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

Stream::Stream(int priority) {
  MEMSTRESS_CUDA_TRY(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
}

Stream::~Stream() {
  if (stream_ != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaStreamDestroy(stream_));
  }
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const {
  MEMSTRESS_CUDA_TRY(cudaStreamSynchronize(stream_));
}

Event::Event(Timing timing) {
  const unsigned flags = timing == Timing::enabled ? cudaEventDefault : cudaEventDisableTiming;
  MEMSTRESS_CUDA_TRY(cudaEventCreateWithFlags(&event_, flags));
}

Event::~Event() {
  if (event_ != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaEventDestroy(event_));
  }
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) const {
  MEMSTRESS_CUDA_TRY(cudaEventRecord(event_, stream));
}

void Event::synchronize() const {
  MEMSTRESS_CUDA_TRY(cudaEventSynchronize(event_));
}

bool Event::query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    static_cast<void>(cudaGetLastError());
    return false;
  }
  MEMSTRESS_CUDA_TRY(status);
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.0F;
  MEMSTRESS_CUDA_TRY(cudaEventElapsedTime(&ms, start.event_, stop.event_));
  return ms;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes != 0) {
    MEMSTRESS_CUDA_TRY(cudaMalloc(&data_, bytes));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaFree(data_));
  }
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes != 0) {
    MEMSTRESS_CUDA_TRY(cudaHostAlloc(&data_, bytes, cudaHostAllocPortable | cudaHostAllocMapped));
  }
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) {
    MEMSTRESS_CUDA_WARN(cudaFreeHost(data_));
  }
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    PinnedBuffer old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return count;
}

}  // namespace memstress::cuda
