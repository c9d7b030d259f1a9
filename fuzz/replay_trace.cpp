// The allocation-trace reader of `memstress replay` and `doctor`: replay::parse_replay_trace
// (harness/replay/replay_trace.hpp), and the promise of format_replay_trace that its text reads back as
// the same events.

#include "harness/replay/replay_trace.hpp"

#include "fuzz/fuzz_target.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const replay::ReplayTrace trace = replay::parse_replay_trace(input, "fuzz.trace.csv");
    if (trace.events.empty()) {
      return;
    }
    static_cast<void>(device_index(trace, "", "--trace-device"));
    const std::string text = replay::format_replay_trace(trace, "fuzz");
    const replay::ReplayTrace back = fuzz::must("format_replay_trace's text does not read back", [&] {
      return replay::parse_replay_trace(text, "formatted");
    });
    fuzz::check(back.devices == trace.devices && back.events.size() == trace.events.size(),
                "format_replay_trace's text reads back as another trace");
    fuzz::check(back.events == trace.events, "format_replay_trace's text reads back as other events");
  });
}
