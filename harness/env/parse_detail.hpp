#pragma once

// Pure text helpers of the environment collector that environment.hpp does not publish; declared here
// so that the unit tests can run them on fixed text.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memstress::env_detail {

// `text` without leading and trailing blanks (spaces, tabs, CR, LF).
std::string_view trim(std::string_view text) noexcept;

// The first line of `text`, trimmed ("Open MPI v4.1.6, package: …").
std::string first_line_trimmed(std::string_view text);

// Whether a variable is recorded with the run: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
// NVIDIA_VISIBLE_DEVICES, PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF, and every NCCL_*,
// OMPI_COMM_WORLD_* and MEMSTRESS_* variable.
bool is_recorded_variable(std::string_view name) noexcept;

// The recorded variables of a null-terminated "NAME=value" array (as `environ`), sorted by name.
std::vector<std::pair<std::string, std::string>> recorded_variables(const char* const* entries);

}  // namespace memstress::env_detail
