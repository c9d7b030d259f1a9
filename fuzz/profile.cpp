// Acceptance profiles (`memstress accept --profile FILE`): parse_profile (harness/accept/profile.hpp), and
// the promise behind `accept --train --write`: what to_yaml writes is a profile parse_profile reads back,
// with the same runs and checks.

#include "harness/accept/profile.hpp"

#include <string>

#include "fuzz/fuzz_target.hpp"

namespace {

bool same_shape(const memstress::Profile& a, const memstress::Profile& b) {
  if (a.name != b.name || a.gpu != b.gpu || a.runs.size() != b.runs.size() ||
      a.checks.size() != b.checks.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.runs.size(); ++i) {
    const memstress::ProfileRun& x = a.runs[i];
    const memstress::ProfileRun& y = b.runs[i];
    if (x.workload != y.workload || x.params != y.params || x.min_ranks != y.min_ranks ||
        x.in_turn != y.in_turn) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.checks.size(); ++i) {
    const memstress::AcceptCheck& x = a.checks[i];
    const memstress::AcceptCheck& y = b.checks[i];
    // Thresholds are written with 6 significant digits: only whether each is there is compared.
    if (x.name != y.name || x.workload != y.workload || x.metric != y.metric || x.where != y.where ||
        x.golden.has_value() != y.golden.has_value() || x.min.has_value() != y.min.has_value() ||
        x.max.has_value() != y.max.has_value() || x.min_ranks != y.min_ranks) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string input(fuzz::text(data, size));
  return fuzz::run([&] {
    const Profile profile = parse_profile(input, "fuzz.yaml", "--train");
    const std::string written = fuzz::must("to_yaml", [&] { return to_yaml(profile); });
    const Profile back = fuzz::must("to_yaml's profile does not read back",
                                    [&] { return parse_profile(written, "written.yaml", "--train"); });
    fuzz::check(same_shape(profile, back), "to_yaml's profile reads back as another profile",
                written.c_str());
  });
}
