#include "harness/doctor/batch_match.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <unordered_map>

namespace memstress::doctor {
namespace {

using Key = std::uint64_t;

std::vector<Key> keys_of(const std::vector<Request>& requests, bool by_site) {
  std::vector<Key> keys;
  keys.reserve(requests.size());
  for (const Request& r : requests) {
    const auto site = static_cast<std::uint32_t>(by_site ? r.site : 0);
    keys.push_back((static_cast<Key>(site) << 32) | r.stream);
  }
  return keys;
}

// Myers' greedy diff under a match predicate (it needs no transitivity: each snake only asks whether a[x]
// matches b[y]); returns the matched pairs, or nothing when more than max_d edits are needed.
template <typename Same>
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> myers(std::size_t size_a, std::size_t size_b,
                                                                      const Same& same, std::size_t max_d) {
  const auto n = static_cast<std::ptrdiff_t>(size_a);
  const auto m = static_cast<std::ptrdiff_t>(size_b);
  const std::ptrdiff_t limit = std::min<std::ptrdiff_t>(n + m, static_cast<std::ptrdiff_t>(max_d));
  const std::ptrdiff_t offset = limit + 1;
  std::vector<std::ptrdiff_t> v(static_cast<std::size_t>(2 * limit + 3), 0);
  std::vector<std::vector<std::ptrdiff_t>> history;  // v[-d..d] before step d
  const auto at = [&](std::ptrdiff_t k) -> std::ptrdiff_t& {
    return v[static_cast<std::size_t>(k + offset)];
  };
  for (std::ptrdiff_t d = 0; d <= limit; ++d) {
    history.emplace_back(v.begin() + (offset - d - 1), v.begin() + (offset + d + 2));
    for (std::ptrdiff_t k = -d; k <= d; k += 2) {
      std::ptrdiff_t x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      std::ptrdiff_t y = x - k;
      while (x < n && y < m && same(static_cast<std::size_t>(x), static_cast<std::size_t>(y))) {
        ++x;
        ++y;
      }
      at(k) = x;
      if (x >= n && y >= m) {
        // Back from the end: each step d came from diagonal k+1 (a request of b only) or k-1 (of a only),
        // then followed a snake of matches, which are the pairs.
        std::vector<std::pair<std::size_t, std::size_t>> pairs;
        std::ptrdiff_t cx = n;
        std::ptrdiff_t cy = m;
        for (std::ptrdiff_t e = d; e > 0; --e) {
          const std::vector<std::ptrdiff_t>& h = history[static_cast<std::size_t>(e)];
          const auto hv = [&](std::ptrdiff_t kk) { return h[static_cast<std::size_t>(kk + e + 1)]; };
          const std::ptrdiff_t ck = cx - cy;
          const bool down = ck == -e || (ck != e && hv(ck - 1) < hv(ck + 1));
          const std::ptrdiff_t pk = down ? ck + 1 : ck - 1;
          const std::ptrdiff_t px = hv(pk);
          const std::ptrdiff_t snake_x = down ? px : px + 1;  // where the snake of step e began
          while (cx > snake_x) {
            --cx;
            --cy;
            pairs.emplace_back(static_cast<std::size_t>(cx), static_cast<std::size_t>(cy));
          }
          cx = px;
          cy = px - pk;
        }
        while (cx > 0 && cy > 0) {
          --cx;
          --cy;
          pairs.emplace_back(static_cast<std::size_t>(cx), static_cast<std::size_t>(cy));
        }
        std::reverse(pairs.begin(), pairs.end());
        return pairs;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::int32_t SiteIds::id(const SnapshotFacts& facts, std::int32_t site) {
  if (site < 0 || static_cast<std::size_t>(site) >= facts.sites.size()) {
    return site;
  }
  const Site& s = facts.sites[static_cast<std::size_t>(site)];
  const auto [it, fresh] = ids_.emplace(fmt::format("{}\n{}\n{}", s.filename, s.line, s.function),
                                        static_cast<std::int32_t>(ids_.size()));
  return it->second;
}

std::vector<Request> requests_of(const DoctorInput& input, std::uint32_t device, SiteIds& sites) {
  std::vector<Request> out;
  std::unordered_map<std::uint64_t, std::uint32_t> streams;
  for (std::size_t i = 0; i < input.trace.events.size(); ++i) {
    const replay::Event& e = input.trace.events[i];
    if (e.device != device || e.action != replay::Action::alloc) {
      continue;
    }
    const auto [it, fresh] = streams.emplace(e.stream, static_cast<std::uint32_t>(streams.size()));
    out.push_back(Request{i, e.bytes, it->second, sites.id(input.facts, input.facts.site_of(e.id))});
  }
  return out;
}

Match match_requests(const std::vector<Request>& a, const std::vector<Request>& b, bool by_site,
                     double ratio) {
  Match m;
  m.by_site = by_site;
  const std::vector<Key> ka = keys_of(a, by_site);
  const std::vector<Key> kb = keys_of(b, by_site);
  // Anchors: the same key, and a size either unchanged or scaled exactly by the batches' ratio (a tensor of
  // the batch: its bytes are the batch times a whole number). What else changed size is paired in a second
  // pass, where the anchors leave gaps of equal length and equal keys.
  const auto scaled = [&](std::uint64_t sa, std::uint64_t sb) {
    const double expected = static_cast<double>(sa) * ratio;
    return std::abs(static_cast<double>(sb) - expected) <= 0.5;
  };
  const auto anchor = [&](std::size_t i, std::size_t j) {
    return ka[i] == kb[j] && (a[i].bytes == b[j].bytes || scaled(a[i].bytes, b[j].bytes));
  };
  std::optional<std::vector<std::pair<std::size_t, std::size_t>>> anchors =
      myers(a.size(), b.size(), anchor, kMaxEdits);
  if (!anchors) {
    m.by_position = true;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      m.pairs.emplace_back(i, i);
    }
  } else {
    m.anchors = anchors->size();
    std::size_t i0 = 0;
    std::size_t j0 = 0;
    const auto fill_gap = [&](std::size_t i1, std::size_t j1) {  // [i0, i1) against [j0, j1)
      if (i1 - i0 != j1 - j0) {
        return;
      }
      for (std::size_t k = 0; k < i1 - i0; ++k) {
        if (ka[i0 + k] != kb[j0 + k]) {
          return;
        }
      }
      for (std::size_t k = 0; k < i1 - i0; ++k) {
        m.pairs.emplace_back(i0 + k, j0 + k);
      }
    };
    for (const auto& [i, j] : *anchors) {
      fill_gap(i, j);
      m.pairs.emplace_back(i, j);
      i0 = i + 1;
      j0 = j + 1;
    }
    fill_gap(a.size(), b.size());
  }
  m.only_a = a.size() - m.pairs.size();
  m.only_b = b.size() - m.pairs.size();
  return m;
}

}  // namespace memstress::doctor
