#include "harness/memory/device_spec.hpp"

#include <fmt/format.h>

#include <charconv>

#include "harness/core/error.hpp"
#include "harness/core/log.hpp"
#include "harness/core/units.hpp"
#include "harness/memory/gpu_backend.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {

DeviceSpec DeviceSpec::parse(std::string_view text, std::string_view what) {
  DeviceSpec spec;
  spec.what = what;
  if (text == "auto") {
    return spec;
  }
  if (text == "sim") {
    spec.kind = Kind::sim;
    return spec;
  }
  if (text.starts_with("sim:")) {
    spec.kind = Kind::sim;
    spec.sim_capacity = parse_bytes(text.substr(4), fmt::format("{} sim:CAPACITY", what));
    if (spec.sim_capacity == 0) {
      throw InputError(fmt::format("{} sim:CAPACITY: the capacity must be more than 0 bytes", what));
    }
    if (spec.sim_capacity > SimBackend::kMaxCapacity) {
      throw InputError(fmt::format("{} sim:{}: a simulated device holds at most {} ({} bytes)", what,
                                   format_bytes(spec.sim_capacity), format_bytes(SimBackend::kMaxCapacity),
                                   SimBackend::kMaxCapacity));
    }
    return spec;
  }
  if (text == "cuda") {
    spec.kind = Kind::cuda;
    return spec;
  }
  if (text.starts_with("cuda:")) {
    spec.kind = Kind::cuda;
    const std::string_view number = text.substr(5);
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), spec.ordinal);
    if (ec != std::errc{} || ptr != number.data() + number.size() || spec.ordinal < 0) {
      throw InputError(fmt::format("{} '{}': expected cuda:N with N a device ordinal", what, text));
    }
    return spec;
  }
  throw InputError(
      fmt::format("{} '{}': expected auto, cuda, cuda:N, sim or sim:CAPACITY (e.g. sim:80GiB)", what, text));
}

std::string DeviceSpec::to_string() const {
  switch (kind) {
    case Kind::automatic:
      return "auto";
    case Kind::cuda:
      return fmt::format("cuda:{}", ordinal);
    case Kind::sim:
      return fmt::format("sim:{}", format_bytes(sim_capacity));
  }
  return "auto";
}

std::string required_device(const std::string& device, std::string_view device_what, bool required,
                            bool from_env, std::string_view flag) {
  if (!required) {
    return device;
  }
  const DeviceSpec spec = DeviceSpec::parse(device, device_what);
  if (spec.kind == DeviceSpec::Kind::sim && from_env) {
    return device;  // asked for by name in a job that requires a GPU by its environment (its CPU tests)
  }
  if (spec.kind == DeviceSpec::Kind::sim) {
    throw InputError(fmt::format("{} with {} {}: the simulated device is no GPU", flag, device_what, device));
  }
  return spec.kind == DeviceSpec::Kind::automatic ? "cuda" : device;
}

std::unique_ptr<DeviceBackend> make_backend(const DeviceSpec& spec, SimAddressOrder sim_order) {
  switch (spec.kind) {
    case DeviceSpec::Kind::sim:
      return std::make_unique<SimBackend>(spec.sim_capacity, sim_order);
    case DeviceSpec::Kind::cuda: {
      const int count = gpu_count();
      if (count == 0) {
        throw EnvironmentError(
            fmt::format("{} {}: no CUDA device found ({})", spec.what, spec.to_string(), no_gpu_reason()));
      }
      if (spec.ordinal >= count) {
        throw EnvironmentError(
            fmt::format("{} {}: this machine has {} CUDA device(s)", spec.what, spec.to_string(), count));
      }
      return make_gpu_backend(spec.ordinal);
    }
    case DeviceSpec::Kind::automatic:
      if (gpu_count() > 0) {
        return make_gpu_backend(spec.ordinal);
      }
      note(
          "no CUDA device found: running on the simulated device sim:{} (workloads that need a real GPU "
          "are skipped)",
          format_bytes(spec.sim_capacity));
      return std::make_unique<SimBackend>(spec.sim_capacity, sim_order);
  }
  throw InputError(fmt::format("{}: unknown kind", spec.what));
}

}  // namespace memstress
