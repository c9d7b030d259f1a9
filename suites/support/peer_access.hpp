#pragma once

// Peer access between every pair of a set of GPUs, for the scope (RAII): enabled where the hardware
// allows it, and disabled again at the end only where this owner enabled it (peer access is process-wide
// state; another owner's mappings are left alone).

#include <utility>
#include <vector>

namespace memstress::suites {

class PeerAccess {
 public:
  // Enables access from every device in `devices` to every other one that it can reach.
  explicit PeerAccess(const std::vector<int>& devices);
  ~PeerAccess();
  PeerAccess(const PeerAccess&) = delete;
  PeerAccess& operator=(const PeerAccess&) = delete;
  PeerAccess(PeerAccess&&) = delete;
  PeerAccess& operator=(PeerAccess&&) = delete;

  // Whether `from` can load and store `to`'s memory.
  [[nodiscard]] bool can_access(int from, int to) const noexcept;
  // The ordered pairs the driver refused peer access (copies between them go through the host).
  [[nodiscard]] const std::vector<std::pair<int, int>>& refused() const noexcept { return refused_; }

 private:
  std::vector<std::pair<int, int>> reachable_;  // (from, to)
  std::vector<std::pair<int, int>> enabled_;    // by this owner
  std::vector<std::pair<int, int>> refused_;    // (from, to)
};

}  // namespace memstress::suites
