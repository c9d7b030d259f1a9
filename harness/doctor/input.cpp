#include "harness/doctor/input.hpp"

#include "harness/replay/replay_trace.hpp"
#include "harness/replay/snapshot_input.hpp"

namespace memstress::doctor {

DoctorInput load_input(const std::filesystem::path& path) {
  const replay::InputKind kind = replay::input_kind(path);
  if (kind == replay::InputKind::memstress_trace) {
    return DoctorInput{replay::read_replay_trace(path), SnapshotFacts{}};
  }
  const replay::ConvertedTrace converted(path, /*with_facts=*/true);
  DoctorInput input{
      replay::read_replay_trace(converted.trace(), path.string() + " (as converted to a trace)"),
      read_facts(converted.facts(), path.string())};
  input.trace.name = path.string();  // messages name the user's file, not the temporary trace
  return input;
}

}  // namespace memstress::doctor
