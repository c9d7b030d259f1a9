// The results loader behind `memstress compare` and `accept --from`: parse_results
// (harness/results/read.hpp) on a memstress .json document, a .jsonl stream (cut short or not) or
// Google Benchmark JSON. Every field is read through JsonField, so nothing but InputError may get out.

#include "fuzz/fuzz_target.hpp"
#include "harness/results/read.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const Results results = parse_results(input);
    for (const ResultRow& row : results.rows) {
      for (const MetricResult& m : row.metrics) {
        fuzz::check(row.metric(m.name) != nullptr, "a row's metric cannot be found by its name");
      }
    }
  });
}
