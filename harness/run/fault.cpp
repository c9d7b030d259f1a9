#include "harness/run/fault.hpp"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/log.hpp"

namespace memstress {
namespace {

template <typename T>
bool parse_number(std::string_view text, T& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

FaultInjection FaultInjection::parse(std::string_view text, std::string_view what) {
  const auto bad = [&] {
    return InputError(fmt::format("{} '{}': expected RANK:CASE_INDEX:exit|hang|throw", what, text));
  };
  const std::size_t first = text.find(':');
  const std::size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (second == std::string_view::npos) {
    throw bad();
  }
  FaultInjection fault;
  fault.what = std::string(what);
  if (!parse_number(text.substr(0, first), fault.rank) || fault.rank < 0 ||
      !parse_number(text.substr(first + 1, second - first - 1), fault.case_index)) {
    throw bad();
  }
  const std::string_view kind = text.substr(second + 1);
  if (kind == "exit") {
    fault.kind = Kind::exit;
  } else if (kind == "hang") {
    fault.kind = Kind::hang;
  } else if (kind == "throw") {
    fault.kind = Kind::raise;
  } else {
    throw bad();
  }
  return fault;
}

void maybe_inject(const std::optional<FaultInjection>& fault, int rank, std::size_t case_index) {
  if (!fault || fault->rank != rank || fault->case_index != case_index) {
    return;
  }
  switch (fault->kind) {
    case FaultInjection::Kind::exit:
      note("{}: exiting at case index {}", fault->what, case_index);
      std::fflush(stderr);
      std::_Exit(1);
    case FaultInjection::Kind::hang:
      note("{}: hanging at case index {}", fault->what, case_index);
      for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    case FaultInjection::Kind::raise:
      throw std::runtime_error(fmt::format("{}: a fault injected at case index {}", fault->what, case_index));
  }
}

}  // namespace memstress
