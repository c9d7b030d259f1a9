// The results loader behind `memstress compare` and `accept --from`: parse_results
// (harness/results/read.hpp) on a memstress .json document, a .jsonl stream (cut short or not) or
// Google Benchmark JSON, or any of them xz- or gzip-compressed (decompressed first, as read_results_file
// does, under a bound). Every field is read through JsonField, so nothing but InputError may get out.

#include <algorithm>
#include <string>

#include "fuzz/fuzz_target.hpp"
#include "harness/results/compressed.hpp"
#include "harness/results/read.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    // A small bound, so that a fuzzed bomb ends quickly: what passes it must be what it was compressed from.
    constexpr std::uint64_t kFuzzTextBytes = std::uint64_t{1} << 22U;
    const std::string text = decompressed(std::string(input), kFuzzTextBytes);
    fuzz::check(text.size() <= std::max<std::size_t>(kFuzzTextBytes, input.size()),
                "decompressed past its bound");
    const Results results = parse_results(text);
    for (const ResultRow& row : results.rows) {
      for (const MetricResult& m : row.metrics) {
        fuzz::check(row.metric(m.name) != nullptr, "a row's metric cannot be found by its name");
      }
    }
  });
}
