// MEMSTRESS_PLANT_FAULT: the parser (every build) and the reading (fault-hook builds only). Note [Planted
// faults] in planted_faults.hpp.

#include "harness/core/planted_faults.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::string_view kVariable = "MEMSTRESS_PLANT_FAULT";

// The variable's text; nullptr where it is not set.
const char* variable_text() {
  return std::getenv(std::string(kVariable).c_str());  // NOLINT(concurrency-mt-unsafe): read-only
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::uint64_t number(std::string_view field, std::uint64_t most, std::string_view item,
                     std::string_view what) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (field.empty() || ec != std::errc{} || end != field.data() + field.size() || v > most) {
    throw InputError(
        fmt::format("{} item '{}': {} must be a whole number from 0 to {}", kVariable, item, what, most));
  }
  return v;
}

BitFault bit_fault(const std::vector<std::string_view>& f, std::string_view item) {
  const bool stuck = f[0] == "stuck";
  if (f.size() != (stuck ? 4U : 3U)) {
    throw InputError(fmt::format("{} item '{}': expected {}", kVariable, item,
                                 stuck ? "stuck:WORD:BIT:VALUE" : "flip:WORD:BIT"));
  }
  BitFault b;
  b.kind = stuck ? BitFault::Kind::stuck : BitFault::Kind::flip;
  b.word = number(f[1], ~0ULL, item, "WORD");
  b.bit = static_cast<unsigned>(number(f[2], 63, item, "BIT"));
  b.value = stuck && number(f[3], 1, item, "VALUE") == 1;
  return b;
}

RefusedPeer refused_peer(const std::vector<std::string_view>& f, std::string_view item) {
  if (f.size() != 3U) {
    throw InputError(fmt::format("{} item '{}': expected nopeer:FROM:TO", kVariable, item));
  }
  constexpr std::uint64_t kMostDevice = 1023;
  return {static_cast<int>(number(f[1], kMostDevice, item, "FROM")),
          static_cast<int>(number(f[2], kMostDevice, item, "TO"))};
}

TimedFault timed_fault(const std::vector<std::string_view>& f, std::string_view item) {
  const bool xid = f.size() >= 3 && f[2] == "xid";
  if (f.size() != (xid ? 4U : 3U)) {
    throw InputError(
        fmt::format("{} item '{}': expected after:SECONDS:flip|slow|throttle|xid:CODE", kVariable, item));
  }
  constexpr std::uint64_t kWeek = 7ULL * 24 * 3600;
  TimedFault t;
  t.after_s = static_cast<double>(number(f[1], kWeek, item, "SECONDS"));
  if (f[2] == "flip") {
    t.kind = TimedFault::Kind::flip;
  } else if (f[2] == "slow") {
    t.kind = TimedFault::Kind::slow;
  } else if (f[2] == "throttle") {
    t.kind = TimedFault::Kind::throttle;
  } else if (xid) {
    t.kind = TimedFault::Kind::xid;
    constexpr std::uint64_t kMostXid = 65535;
    t.xid = number(f[3], kMostXid, item, "CODE");
  } else {
    throw InputError(
        fmt::format("{} item '{}': unknown burn fault '{}'; expected flip, slow, throttle or xid:CODE",
                    kVariable, item, f[2]));
  }
  return t;
}

}  // namespace

bool PlantedFaults::refuses(int from, int to) const noexcept {
  return std::find(refused_peers.begin(), refused_peers.end(), RefusedPeer{from, to}) != refused_peers.end();
}

PlantedFaults parse_planted_faults(std::string_view text) {
  PlantedFaults out;
  if (text.empty()) {
    return out;
  }
  for (const std::string_view item : split(text, ',')) {
    const std::vector<std::string_view> f = split(item, ':');
    if (f[0] == "stuck" || f[0] == "flip") {
      out.bits.push_back(bit_fault(f, item));
    } else if (item == "pageable") {
      out.pageable_host = true;
    } else if (item == "hang") {
      out.hang = true;
    } else if (f[0] == "nopeer") {
      out.refused_peers.push_back(refused_peer(f, item));
    } else if (f[0] == "after") {
      out.timed.push_back(timed_fault(f, item));
    } else {
      throw InputError(
          fmt::format("{} item '{}': unknown fault; expected stuck:WORD:BIT:VALUE, flip:WORD:BIT, pageable, "
                      "nopeer:FROM:TO, after:SECONDS:KIND or hang",
                      kVariable, item));
    }
  }
  return out;
}

bool fault_hooks_built() noexcept {
#if defined(MEMSTRESS_FAULT_HOOKS) && MEMSTRESS_FAULT_HOOKS
  return true;
#else
  return false;
#endif
}

PlantedFaults planted_faults() {
  if (!fault_hooks_built()) {
    return {};
  }
  const char* text = variable_text();
  return text == nullptr ? PlantedFaults{} : parse_planted_faults(text);
}

PlantedFaults simulated_device_faults() {
  const char* text = variable_text();
  return text == nullptr ? PlantedFaults{} : parse_planted_faults(text);
}

std::string fault_hooks_note(bool simulated_device) {
  if (fault_hooks_built()) {
    return "a fault-hook build (MEMSTRESS_FAULT_HOOKS=ON): faults are planted on request "
           "(MEMSTRESS_PLANT_FAULT, "
           "MEMSTRESS_INJECT_HEALTH); its results are for tests, never for accepting a GPU";
  }
  if (variable_text() != nullptr && simulated_device) {
    return fmt::format(
        "{} is set: on the simulated device a burn plants its timed faults (after:SECONDS:KIND) and a run "
        "or accept the hang; the others need a fault-hook build (MEMSTRESS_FAULT_HOOKS=ON, the faults "
        "preset) "
        "and are ignored",
        kVariable);
  }
  return variable_text() == nullptr ? std::string()
                                    : fmt::format(
                                          "{} is set, but this build plants no faults (configure with "
                                          "MEMSTRESS_FAULT_HOOKS=ON, the faults preset): ignored",
                                          kVariable);
}

}  // namespace memstress
