// Sizes as users write them (`-b 1K`, `-p bytes=64M`, `--alloc-limit 40GB`): parse_bytes, and the promise
// of format_bytes (harness/core/units.hpp) that its exact forms read back as the same size.

#include <string>

#include "fuzz/fuzz_target.hpp"
#include "harness/core/units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const std::uint64_t bytes = parse_bytes(input, "-b/--minbytes");
    const std::string shown = format_bytes(bytes);
    if (shown.find('.') == std::string::npos) {
      const std::uint64_t back = fuzz::must("format_bytes's exact form does not parse",
                                            [&] { return parse_bytes(shown, "format_bytes"); });
      fuzz::check(back == bytes, "format_bytes's exact form reads back as another size", shown.c_str());
    }
    static_cast<void>(human_bytes(bytes));
  });
}
