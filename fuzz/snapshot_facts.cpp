// What the converter says of a PyTorch snapshot beyond its trace (`memstress doctor` and `predict-batch`
// read it: harness/doctor/facts.hpp, read_facts). The converter wrote it moments before, but from a pickle
// that came from another machine, so it is read as input. The promise: read_facts refuses with memstress's
// error, or every site it hands out (of an allocation, of an OOM) is one of its sites or a marker
// (kNoFrames, kBeforeRecording), so the doctor's tables index nothing out of range.
//
// Each input is written to a file in a directory of this process's own under the system's temporary
// directory, removed when the process ends.

#include <filesystem>
#include <string>

#include "fuzz/fuzz_target.hpp"
#include "fuzz/scratch.hpp"
#include "harness/doctor/facts.hpp"

namespace {

bool known_site(std::int32_t site, std::size_t sites) {
  using memstress::doctor::kBeforeRecording;
  return site >= kBeforeRecording && (site < 0 || static_cast<std::size_t>(site) < sites);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  static const fuzz::Scratch scratch("facts");
  const std::filesystem::path path = scratch.file("facts.json");
  fuzz::write_file(path, fuzz::text(data, size));
  return fuzz::run([&] {
    const doctor::SnapshotFacts facts = doctor::read_facts(path, "fuzz.facts.json");
    for (std::size_t id = 0; id < facts.alloc_sites.size(); ++id) {
      fuzz::check(known_site(facts.site_of(id), facts.sites.size()), "an allocation's site is out of range");
    }
    for (const doctor::OomFact& oom : facts.ooms) {
      fuzz::check(known_site(oom.site, facts.sites.size()), "an OOM's site is out of range");
    }
    static_cast<void>(facts.recorded_number("device_total"));
    static_cast<void>(facts.recorded_number("batch"));
  });
}
