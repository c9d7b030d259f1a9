#pragma once

// Matching the requests of one program recorded at two batch sizes (`memstress predict-batch`).
//
// Note [Matching two runs]. The same program asks for memory in the same order at any batch size; what
// changes is the size of the batch-dependent requests (activations, attention scores, the loss's
// inputs) and, now and then, the number of some requests (a library's workspaces, chosen per shape).
// The two sequences of allocations are aligned as text is diffed (Myers' O(ND) algorithm, D the number
// of requests left unmatched), in two passes. First the anchors: requests with the same key (the
// allocation's site, its stack's user frame, and its stream, numbered by first appearance since stream
// handles differ between processes) whose size is unchanged or scaled exactly by the ratio of the
// batches, as a tensor of the batch is. The size is what makes the anchors reliable: a backward pass
// runs on PyTorch's autograd thread, whose allocations carry no Python frames, so hundreds of them share
// one key, and one extra request among them (a workspace) would shift every pairing after it. Then the
// gaps the anchors leave: where both runs have the same number of requests with the same keys in a gap,
// they are paired in order (a workspace that grew, an activation with a fixed part); other requests of
// one run only are counted: those of the first run are kept at their size, those of the second dropped.
// Without stack frames the key is the stream alone. An alignment needing more than kMaxEdits edits falls
// back to pairing by position.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/doctor/input.hpp"

namespace memstress::doctor {

struct Request {
  std::uint64_t event_index = 0;  // into its trace's events
  std::uint64_t bytes = 0;
  std::uint32_t stream = 0;  // numbered by first appearance in its run
  std::int32_t site = -1;
};

// Sites by what they are (file, line, function), so that two snapshots, each of which numbers its sites in
// its own order of first appearance, name a site alike. Requests without frames keep their (negative) site.
class SiteIds {
 public:
  [[nodiscard]] std::int32_t id(const SnapshotFacts& facts, std::int32_t site);

 private:
  std::map<std::string, std::int32_t, std::less<>> ids_;
};

// The allocations of `device` (an index into the trace's devices), in order, their sites named by `sites`.
[[nodiscard]] std::vector<Request> requests_of(const DoctorInput& input, std::uint32_t device,
                                               SiteIds& sites);

struct Match {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (index into a, index into b), increasing
  bool by_site = false;                                    // the key had sites (both runs had stack frames)
  std::size_t anchors = 0;   // pairs of the first pass (unchanged, or scaled by the batches' ratio)
  bool by_position = false;  // fell back to pairing by position
  std::size_t only_a = 0;    // requests of a with no partner
  std::size_t only_b = 0;
};

inline constexpr std::size_t kMaxEdits = 2000;

// `ratio`: the second run's batch over the first's.
[[nodiscard]] Match match_requests(const std::vector<Request>& a, const std::vector<Request>& b, bool by_site,
                                   double ratio);

}  // namespace memstress::doctor
