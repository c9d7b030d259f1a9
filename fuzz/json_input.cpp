// Every JSON text memstress reads goes through parse_json_input (Note [Bounded JSON input] in
// harness/core/json_input.hpp). What it accepts must be safe to copy, print and compare (the operations
// that recurse), and print as JSON that reads back as the same value.

#include "harness/core/json_input.hpp"

#include "fuzz/fuzz_target.hpp"
#include "harness/core/json_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const nlohmann::json value = parse_json_input(input);
    const nlohmann::json copy = value;  // NOLINT(performance-unnecessary-copy-initialization): it recurses
    const std::string printed = fuzz::must("json_text", [&] { return json_text(copy); });
    const nlohmann::json back =
        fuzz::must("the printed value does not read back", [&] { return parse_json_input(printed); });
    fuzz::check(back == value, "the printed value reads back as another value", printed.c_str());
  });
}
