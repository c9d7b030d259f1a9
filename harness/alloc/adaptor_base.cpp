#include "harness/alloc/adaptor_base.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace memstress::detail {

namespace {
std::unique_ptr<Allocator> non_null(std::unique_ptr<Allocator> upstream, std::string_view adaptor) {
  if (!upstream) {
    throw std::invalid_argument(fmt::format("{} allocator: the upstream allocator is null", adaptor));
  }
  return upstream;
}
}  // namespace

AdaptorBase::AdaptorBase(std::string_view adaptor, std::unique_ptr<Allocator> upstream)
    : upstream_(non_null(std::move(upstream), adaptor)),
      name_(fmt::format("{}({})", adaptor, upstream_->name())) {}

AdaptorBase::AdaptorBase(std::unique_ptr<Allocator> upstream)
    : upstream_(non_null(std::move(upstream), "peer")), name_(upstream_->name()) {}

}  // namespace memstress::detail
