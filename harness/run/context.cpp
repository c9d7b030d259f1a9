#include "harness/run/context.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "harness/alloc/allocator.hpp"
#include "harness/dist/world.hpp"

namespace memstress {

CaseContext::CaseContext(ParamSet params, Allocator& allocator, std::uint64_t seed, PinnedHostAllocator* host,
                         World* world, NcclComm* nccl) noexcept
    : params_(std::move(params)),
      allocator_(allocator),
      seed_(seed),
      host_(host),
      own_world_(world == nullptr ? std::make_unique<SoloWorld>() : nullptr),
      world_(world == nullptr ? own_world_.get() : world),
      nccl_(nccl) {}

CaseContext::~CaseContext() = default;

PinnedHostAllocator& CaseContext::host_allocator() const {
  if (host_ == nullptr) {
    throw std::logic_error("this run has no pinned host allocator");
  }
  return *host_;
}

DeviceBackend& CaseContext::device() const noexcept {
  return allocator_.backend();
}

void CaseContext::record(std::string_view metric, std::string_view unit, Better better, double value) {
  if (!measuring_) {
    return;
  }
  for (MetricResult& m : metrics_) {
    if (m.name == metric) {
      if (m.unit != unit || m.better != better) {
        throw std::logic_error(
            fmt::format("metric '{}' recorded with unit '{}' and then '{}'", metric, m.unit, unit));
      }
      m.samples.push_back(value);
      return;
    }
  }
  MetricResult m;
  m.name = std::string(metric);
  m.unit = std::string(unit);
  m.better = better;
  m.samples.push_back(value);
  metrics_.push_back(std::move(m));
}

void CaseContext::verified(std::uint64_t checked, std::uint64_t errors) noexcept {
  checked_ += checked;
  errors_ += errors;
}

void CaseContext::note(std::string text) {
  notes_.push_back(std::move(text));
}

void CaseContext::begin_iteration(int index, bool measuring) noexcept {
  iteration_ = index;
  measuring_ = measuring;
}

std::vector<MetricResult> CaseContext::take_metrics() {
  for (MetricResult& m : metrics_) {
    m.summary = summarize(m.samples);
  }
  return std::move(metrics_);
}

}  // namespace memstress
