#include "harness/core/launcher.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstdlib>
#include <string_view>

namespace memstress {

EnvLookup process_env() {
  return [](const char* name) { return std::getenv(name); };  // NOLINT(concurrency-mt-unsafe)
}

bool launched_by_mpi(const EnvLookup& env) {
  constexpr std::array kMarkers{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
  for (const char* name : kMarkers) {
    if (env(name) != nullptr) {
      return true;
    }
  }
  return false;
}

std::optional<int> launcher_rank(const EnvLookup& env) {
  constexpr std::array kRanks{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (const char* name : kRanks) {
    const char* value = env(name);
    if (value == nullptr) {
      continue;
    }
    const std::string_view text(value);
    int rank = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (ec == std::errc() && end == text.data() + text.size() && rank >= 0) {
      return rank;
    }
  }
  return std::nullopt;
}

std::string note_prefix() {
  const std::optional<int> rank = launcher_rank(process_env());
  return rank && *rank != 0 ? fmt::format("memstress: rank {}: ", *rank) : std::string("memstress: ");
}

}  // namespace memstress
