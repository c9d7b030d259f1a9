// TracingAllocator: every allocate, free and OOM written to a memstress trace (make_tracing_allocator).
//
// Design note. Ids are assigned at alloc from a counter (0, 1, 2, …) and a pointer -> id map names the
// id at free, so a trace says nothing about addresses and replays anywhere. The id is taken and its
// line written under one mutex, so ids appear in the file in increasing order. A free's line is
// written, and its pointer forgotten, before the upstream sees the pointer: once the upstream has it,
// another thread may be handed the same address, and its alloc line must come after this free. A free
// line carries the allocation's size and the stream it was made on (deallocate has neither). An
// OutOfMemoryError from the upstream writes an oom line (flushed at once) and is rethrown. If the trace
// cannot be written, the allocator stays consistent (a new allocation is handed back to the upstream,
// a free still reaches it) and the EnvironmentError propagates. Allocations still live when the
// allocator is destroyed have no free line: the upstream releases them untraced. A 0-byte request
// (answered with nullptr) and record_stream write nothing in v1.

#include <fmt/format.h>

#include <exception>
#include <mutex>
#include <unordered_map>

#include "harness/alloc/adaptor_base.hpp"
#include "harness/alloc/adaptors.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/backend.hpp"
#include "harness/trace/trace_writer.hpp"

namespace memstress {
namespace {

class TracingAllocator final : public detail::AdaptorBase {
 public:
  TracingAllocator(std::unique_ptr<Allocator> upstream, const std::filesystem::path& path,
                   std::string_view what)
      : AdaptorBase("tracing", std::move(upstream)), writer_(open(path, backend().info().label(), what)) {}

 private:
  struct Live {
    std::uint64_t id;
    std::size_t bytes;
    std::uint64_t stream;
  };

  static TraceWriter open(const std::filesystem::path& path, std::string device, std::string_view what) {
    try {
      return {path, std::move(device)};
    } catch (const InputError& e) {
      throw InputError(fmt::format("{} {}", what, e.what()));
    }
  }

  void* do_allocate(std::size_t bytes, StreamRef stream) override {
    void* ptr = nullptr;
    try {
      ptr = upstream().allocate(bytes, stream);
    } catch (const OutOfMemoryError&) {
      writer_.write(TraceAction::oom, std::nullopt, bytes, stream.id);
      throw;
    }
    if (ptr == nullptr) {  // 0 bytes: nothing to replay, and no free will follow
      return nullptr;
    }
    const std::scoped_lock lock(mutex_);
    const std::uint64_t id = next_id_++;
    try {
      writer_.write(TraceAction::alloc, id, bytes, stream.id);
    } catch (...) {
      upstream().deallocate(ptr);
      throw;
    }
    live_.emplace(ptr, Live{id, bytes, stream.id});
    return ptr;
  }

  void do_deallocate(void* ptr) override {
    std::exception_ptr write_error;
    {
      const std::scoped_lock lock(mutex_);
      const auto it = live_.find(ptr);
      if (it == live_.end()) {
        throw InputError(fmt::format("{}: deallocate of {} which it did not allocate", name(), ptr));
      }
      const Live live = it->second;
      live_.erase(it);
      try {
        writer_.write(TraceAction::free, live.id, live.bytes, live.stream);
      } catch (...) {
        write_error = std::current_exception();
      }
    }
    upstream().deallocate(ptr);
    if (write_error) {
      std::rethrow_exception(write_error);
    }
  }

  TraceWriter writer_;
  std::mutex mutex_;
  std::unordered_map<void*, Live> live_;
  std::uint64_t next_id_ = 0;
};

}  // namespace

std::unique_ptr<Allocator> make_tracing_allocator(std::unique_ptr<Allocator> upstream,
                                                  const std::filesystem::path& path, std::string_view what) {
  return std::make_unique<TracingAllocator>(std::move(upstream), path, what);
}

}  // namespace memstress
