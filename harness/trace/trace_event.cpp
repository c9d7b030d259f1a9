#include "harness/trace/trace_event.hpp"

namespace memstress {

std::string_view to_string(TraceAction action) noexcept {
  switch (action) {
    case TraceAction::alloc:
      return "alloc";
    case TraceAction::free:
      return "free";
    case TraceAction::oom:
      return "oom";
  }
  return "?";
}

std::optional<TraceAction> trace_action_from(std::string_view name) noexcept {
  for (const TraceAction action : {TraceAction::alloc, TraceAction::free, TraceAction::oom}) {
    if (name == to_string(action)) {
      return action;
    }
  }
  return std::nullopt;
}

}  // namespace memstress
