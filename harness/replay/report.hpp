#pragma once

// What `memstress replay` prints and writes: a table for people, the memstress.replay/1 JSON document
// (results/README.md, results/schema/memstress-replay-1.schema.json) and the timeline as CSV.

#include <nlohmann/json.hpp>
#include <string>

#include "harness/replay/replay_trace.hpp"
#include "harness/replay/replayer.hpp"

namespace memstress::replay {

// One replay: the result and the settings it ran with.
struct ReplayRun {
  std::string alloc_conf;  // as given ("" = the defaults)
  ReplayResult result;
};

[[nodiscard]] nlohmann::json replay_json(const ReplayRun& run);
// The whole document; `sweep` is null or sweep_json()'s object.
[[nodiscard]] nlohmann::json replay_document(const ReplayTrace& trace, const std::string& path,
                                             const ReplayRun& run, nlohmann::json sweep);
[[nodiscard]] std::string format_replay(const ReplayTrace& trace, const std::string& path,
                                        const ReplayRun& run);
// event_index,time_ns,allocated,reserved: one line per timeline point.
[[nodiscard]] std::string timeline_csv(const ReplayResult& result);

}  // namespace memstress::replay
