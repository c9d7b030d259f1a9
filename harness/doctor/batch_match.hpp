#pragma once

// Matching the requests of one program recorded at two batch sizes (`memstress predict-batch`).
//
// Note [Matching two runs]. The same program asks for memory in the same order at any batch size; what
// changes is the size of the batch-dependent requests (activations, attention scores, the loss's
// inputs) and, now and then, the number of some requests (a library's workspaces, chosen per shape).
// So the two sequences of allocations are aligned as text is diffed (Myers' O(ND) algorithm, D the
// number of requests in one run only), on a key that does not depend on the batch: the allocation's
// site (its stack's user frame) and its stream (numbered by first appearance, since stream handles differ
// between processes). Without stack frames the key is the stream alone, so the match is by order: exact
// when both runs made the same number of requests, and said to be a guess when they did not. An
// alignment needing more than kMaxEdits edits falls back to matching by position. Requests found in one
// run only are counted: those of the first run are kept at their size, those of the second dropped.

#include <cstdint>
#include <vector>

#include "harness/doctor/input.hpp"

namespace memstress::doctor {

struct Request {
  std::uint64_t event_index = 0;  // into its trace's events
  std::uint64_t bytes = 0;
  std::uint32_t stream = 0;  // numbered by first appearance in its run
  std::int32_t site = -1;
};

// The allocations of `device` (an index into the trace's devices), in order.
[[nodiscard]] std::vector<Request> requests_of(const DoctorInput& input, std::uint32_t device);

struct Match {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (index into a, index into b), increasing
  bool by_site = false;                                    // the key had sites (both runs had stack frames)
  bool by_position = false;                                // fell back to pairing by position
  std::size_t only_a = 0;                                  // requests of a with no partner
  std::size_t only_b = 0;
};

inline constexpr std::size_t kMaxEdits = 2000;

[[nodiscard]] Match match_requests(const std::vector<Request>& a, const std::vector<Request>& b,
                                   bool by_site);

}  // namespace memstress::doctor
