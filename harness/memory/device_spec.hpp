#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "harness/memory/backend.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {

// A device named as auto (a GPU when one is present, else the simulated device), cuda, cuda:N, sim,
// sim:CAPACITY.
struct DeviceSpec {
  enum class Kind { automatic, cuda, sim };
  static constexpr std::uint64_t kDefaultSimCapacity = 80ULL << 30;  // an 80 GiB card

  Kind kind = Kind::automatic;
  int ordinal = 0;
  std::uint64_t sim_capacity = kDefaultSimCapacity;
  std::string
      what;  // the input it was read from (the command's flag), named in its errors and make_backend's

  // Throws InputError naming `what` and `text` on anything else, and on a simulated device of 0 bytes or
  // more than SimBackend::kMaxCapacity.
  static DeviceSpec parse(std::string_view text, std::string_view what);
  [[nodiscard]] std::string to_string() const;
};

// GPU CI (Note in README "In GPU CI"): with a GPU required (`required`, by the command's flag `flag`), `auto`
// means `cuda`, so a machine without a usable GPU exits 3 instead of falling back to the simulated device and
// skipping every GPU case. The simulated device named (by `device_what`) is refused (InputError naming both),
// unless the requirement came from the environment alone (`from_env`: a job's CPU tests, which name it).
std::string required_device(const std::string& device, std::string_view device_what, bool required,
                            bool from_env, std::string_view flag);

// Resolves `auto` and builds the backend. Throws EnvironmentError (exit 3), naming spec.what, when cuda is
// asked for and no usable GPU (or not GPU `ordinal`) is present.
// `sim_order` places the simulated device's reservations (sim_backend.hpp).
std::unique_ptr<DeviceBackend> make_backend(const DeviceSpec& spec,
                                            SimAddressOrder sim_order = SimAddressOrder::first_fit);

}  // namespace memstress
