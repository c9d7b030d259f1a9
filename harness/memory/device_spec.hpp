#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "harness/memory/backend.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {

// --device: auto (a GPU when one is present, else the simulated device), cuda, cuda:N, sim, sim:CAPACITY.
struct DeviceSpec {
  enum class Kind { automatic, cuda, sim };
  static constexpr std::uint64_t kDefaultSimCapacity = 80ULL << 30;  // an 80 GiB card

  Kind kind = Kind::automatic;
  int ordinal = 0;
  std::uint64_t sim_capacity = kDefaultSimCapacity;

  // Throws InputError naming --device on anything else.
  static DeviceSpec parse(std::string_view text);
  [[nodiscard]] std::string to_string() const;
};

// Resolves `auto` and builds the backend. Throws EnvironmentError (exit 3) when cuda is asked for and
// no usable GPU is present.
// `sim_order` places the simulated device's reservations (sim_backend.hpp).
std::unique_ptr<DeviceBackend> make_backend(const DeviceSpec& spec,
                                            SimAddressOrder sim_order = SimAddressOrder::first_fit);

}  // namespace memstress
