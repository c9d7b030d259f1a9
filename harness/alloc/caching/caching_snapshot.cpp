// PyTorch-style memory snapshot of the caching allocator: every segment, its blocks and their states
// ("active_allocated", "active_pending_free", "inactive"), the shape torch.cuda.memory_snapshot() gives.
// An expandable segment is reported as one segment per contiguous mapped run, as PyTorch does.

#include <algorithm>
#include <unordered_set>

#include "harness/alloc/caching/caching_allocator.hpp"

namespace memstress::caching {
namespace {

std::string_view state_of(const Block& b) {
  if (b.allocated) {
    return "active_allocated";
  }
  return b.event_count > 0 || !b.stream_uses.empty() ? "active_pending_free" : "inactive";
}

nlohmann::json segment_json(const std::vector<const Block*>& run, StreamRef stream) {
  nlohmann::json blocks = nlohmann::json::array();
  std::uint64_t total = 0;
  std::uint64_t allocated = 0;
  std::uint64_t active = 0;
  std::uint64_t requested = 0;
  for (const Block* b : run) {
    const bool is_active = b->allocated || b->event_count > 0 || !b->stream_uses.empty();
    total += b->size;
    allocated += b->allocated ? b->size : 0;
    active += is_active ? b->size : 0;
    requested += is_active ? b->requested : 0;
    blocks.push_back({{"address", b->ptr},
                      {"size", b->size},
                      {"requested_size", b->allocated ? b->requested : 0},
                      {"state", state_of(*b)}});
  }
  const Block& head = *run.front();
  return {{"address", head.ptr},
          {"total_size", total},
          {"allocated_size", allocated},
          {"active_size", active},
          {"requested_size", requested},
          {"stream", stream.id},
          {"segment_type", head.pool == PoolKind::small ? "small" : "large"},
          {"is_expandable", head.expandable},
          {"blocks", blocks}};
}

}  // namespace

nlohmann::json CachingAllocator::snapshot() const {
  nlohmann::json segments = nlohmann::json::array();
  for (StreamPools* sp : all_pools()) {
    const std::scoped_lock lock(sp->lock);
    if (sp->parked != nullptr) {
      changed(*sp);  // unparking changes its blocks (Note [Statistics, incrementally])
    }
    unpark(*sp);
    std::unordered_set<const Block*> heads;
    const auto add_head = [&](const Block* b) {
      while (b->prev != nullptr) {
        b = b->prev;
      }
      heads.insert(b);
    };
    for (const auto& pool : sp->free) {
      std::for_each(pool.begin(), pool.end(), add_head);
    }
    if (sp->expandable != nullptr) {
      for (const auto& pool : sp->expandable->unmapped) {
        std::for_each(pool.begin(), pool.end(), add_head);
      }
    }
    sp->live.for_each([&](std::uintptr_t, const Block* b) { add_head(b); });
    for (const auto& [event, b] : sp->pending) {
      add_head(b);
    }
    for (const Block* head : heads) {
      std::vector<const Block*> run;
      for (const Block* b = head; b != nullptr; b = b->next) {
        if (b->mapped) {
          run.push_back(b);
          continue;
        }
        if (!run.empty()) {
          segments.push_back(segment_json(run, sp->stream));
          run.clear();
        }
      }
      if (!run.empty()) {
        segments.push_back(segment_json(run, sp->stream));
      }
    }
  }
  std::sort(segments.begin(), segments.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["address"].get<std::uint64_t>() < b["address"].get<std::uint64_t>();
  });
  return {{"allocator", name()},
          {"device", backend_.info().label()},
          {"config", config_.text},
          {"segments", segments}};
}

}  // namespace memstress::caching
