#pragma once

// What every fuzz target shares (Note [Fuzzing the parsers] in fuzz/CMakeLists.txt): the input as text,
// memstress::Error as the one expected way to refuse it, and a check that ends the input as a finding.

#include <cxxabi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>

#include "harness/core/error.hpp"

namespace memstress::fuzz {

inline std::string_view text(const std::uint8_t* data, std::size_t size) noexcept {
  return {reinterpret_cast<const char*>(data), size};  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
}

// A broken promise: says which and aborts, so libFuzzer saves the input as a crash.
[[noreturn]] inline void finding(const char* what, const char* detail = "") {
  std::fprintf(stderr, "memstress fuzz: FINDING: %s%s%s\n", what, *detail != '\0' ? ": " : "", detail);
  std::abort();
}

inline void check(bool ok, const char* what, const char* detail = "") {
  if (!ok) {
    finding(what, detail);
  }
}

// The demangled name of an exception's type ("nlohmann::...::out_of_range").
inline std::string type_name(const std::exception& e) {
  int status = 0;
  const std::unique_ptr<char, decltype(&std::free)> name(
      abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), &std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

// Runs `parse` on one input: memstress::Error is the expected refusal; any other exception is a finding
// (named by its type, which std::terminate would not show in every runtime).
template <typename Parse>
int run(Parse&& parse) {
  try {
    parse();
  } catch (const Error&) {
    // bad input, refused as promised
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memstress fuzz: FINDING: %s escaped the parser: %s\n", type_name(e).c_str(),
                 e.what());
    std::abort();
  }
  return 0;
}

// What a parser promised about input it accepted: any exception here, memstress::Error included, is a
// finding (the promise was that this cannot fail).
template <typename Step>
auto must(const char* what, Step&& step) -> decltype(step()) {
  try {
    return step();
  } catch (const std::exception& e) {
    finding(what, e.what());
  }
}

}  // namespace memstress::fuzz
