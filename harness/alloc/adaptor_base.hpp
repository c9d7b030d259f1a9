#pragma once

// What every adaptor (harness/alloc/adaptors.hpp) shares: it owns its upstream, is named
// "<adaptor>(<upstream>)", reports the upstream's backend, and forwards empty_cache, record_stream
// and, unless it overrides them, the statistics. A request the upstream answers with nullptr (0 bytes)
// is handed back as it is, and adaptors keep no record of it. Private to harness/alloc.

#include <memory>
#include <string>
#include <string_view>

#include "harness/alloc/allocator.hpp"

namespace memstress::detail {

class AdaptorBase : public Allocator {
 public:
  // Throws std::invalid_argument when `upstream` is null.
  AdaptorBase(std::string_view adaptor, std::unique_ptr<Allocator> upstream);
  // Named as the upstream itself: for an adaptor that completes a peer rather than wrapping it.
  explicit AdaptorBase(std::unique_ptr<Allocator> upstream);

  [[nodiscard]] std::string_view name() const noexcept override { return name_; }
  [[nodiscard]] DeviceBackend& backend() const noexcept override { return upstream_->backend(); }
  [[nodiscard]] MemoryStats memory_stats() const override { return upstream_->memory_stats(); }
  void reset_peak_stats() override { upstream_->reset_peak_stats(); }

 protected:
  [[nodiscard]] Allocator& upstream() const noexcept { return *upstream_; }

 private:
  void do_empty_cache() override { upstream_->empty_cache(); }
  void do_record_stream(void* ptr, StreamRef stream) override { upstream_->record_stream(ptr, stream); }

  std::unique_ptr<Allocator> upstream_;
  std::string name_;
};

}  // namespace memstress::detail
