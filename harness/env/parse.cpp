// Pure parsing and formatting helpers of the environment collector: /proc/driver/nvidia/version,
// /proc/cpuinfo, /etc/os-release, NCCL and CUDA version codes, the recorded environment variables.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "harness/env/environment.hpp"
#include "harness/env/parse_detail.hpp"

namespace memstress {
namespace {

constexpr std::string_view kBlanks = " \t\r\n";

// Calls fn(line) for each line of text until it returns true.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (fn(line)) {
      return;
    }
    if (end == std::string_view::npos) {
      return;
    }
    text.remove_prefix(end + 1);
  }
}

bool is_digit(char c) noexcept {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// "580.159.04": digits and dots, starting with a digit, with at least one dot.
bool looks_like_version(std::string_view token) noexcept {
  return !token.empty() && is_digit(token.front()) && token.find('.') != std::string_view::npos &&
         std::all_of(token.begin(), token.end(), [](char c) { return is_digit(c) || c == '.'; });
}

}  // namespace

namespace env_detail {

std::string_view trim(std::string_view text) noexcept {
  const std::size_t begin = text.find_first_not_of(kBlanks);
  if (begin == std::string_view::npos) {
    return {};
  }
  const std::size_t end = text.find_last_not_of(kBlanks);
  return text.substr(begin, end - begin + 1);
}

std::string first_line_trimmed(std::string_view text) {
  const std::string_view trimmed = trim(text);
  return std::string(trim(trimmed.substr(0, trimmed.find('\n'))));
}

bool is_recorded_variable(std::string_view name) noexcept {
  constexpr std::array<std::string_view, 5> kExact = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                                      "NVIDIA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF",
                                                      "PYTORCH_ALLOC_CONF"};
  constexpr std::array<std::string_view, 3> kPrefixes = {"NCCL_", "OMPI_COMM_WORLD_", "MEMSTRESS_"};
  return std::find(kExact.begin(), kExact.end(), name) != kExact.end() ||
         std::any_of(kPrefixes.begin(), kPrefixes.end(),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

std::vector<std::pair<std::string, std::string>> recorded_variables(const char* const* entries) {
  std::vector<std::pair<std::string, std::string>> variables;
  for (const char* const* entry = entries; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos) {
      continue;
    }
    const std::string_view name = text.substr(0, equals);
    if (is_recorded_variable(name)) {
      variables.emplace_back(std::string(name), std::string(text.substr(equals + 1)));
    }
  }
  std::sort(variables.begin(), variables.end());
  return variables;
}

}  // namespace env_detail

std::string parse_proc_driver_version(const std::string& text) {
  std::string version;
  for_each_line(text, [&](std::string_view line) {
    if (line.find("NVRM version:") == std::string_view::npos) {
      return false;
    }
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu …" or, for the open modules,
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  …".
    while (!line.empty()) {
      line = line.substr(std::min(line.size(), line.find_first_not_of(kBlanks)));
      const std::string_view token = line.substr(0, line.find_first_of(kBlanks));
      if (looks_like_version(token)) {
        version = std::string(token);
        return true;
      }
      line.remove_prefix(token.size());
    }
    return true;
  });
  return version;
}

std::string parse_cpuinfo_model(const std::string& text) {
  std::string model;
  for_each_line(text, [&](std::string_view line) {
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || env_detail::trim(line.substr(0, colon)) != "model name") {
      return false;
    }
    model = std::string(env_detail::trim(line.substr(colon + 1)));
    return true;
  });
  return model;
}

std::string parse_os_release_pretty_name(const std::string& text) {
  std::string name;
  for_each_line(text, [&](std::string_view line) {
    line = env_detail::trim(line);
    constexpr std::string_view kKey = "PRETTY_NAME=";
    if (!line.starts_with(kKey)) {
      return false;
    }
    std::string_view value = line.substr(kKey.size());
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    // os-release allows shell escapes inside double quotes: \" \\ \$ \`.
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '\\' && i + 1 < value.size()) {
        ++i;
      }
      name += value[i];
    }
    return true;
  });
  return name;
}

std::string format_nccl_version(int code) {
  if (code <= 0) {
    return "unknown";
  }
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before.
  if (code >= 10000) {
    return fmt::format("{}.{}.{}", code / 10000, code % 10000 / 100, code % 100);
  }
  return fmt::format("{}.{}.{}", code / 1000, code % 1000 / 100, code % 100);
}

std::string format_cuda_version(int version) {
  if (version <= 0) {
    return "none";
  }
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

}  // namespace memstress
