#include "harness/doctor/batch_match.hpp"

#include <algorithm>
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

// Myers' greedy diff; returns the matched pairs, or nothing when more than max_d edits are needed.
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> myers(const std::vector<Key>& a,
                                                                      const std::vector<Key>& b,
                                                                      std::size_t max_d) {
  const auto n = static_cast<std::ptrdiff_t>(a.size());
  const auto m = static_cast<std::ptrdiff_t>(b.size());
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
      while (x < n && y < m && a[static_cast<std::size_t>(x)] == b[static_cast<std::size_t>(y)]) {
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

std::vector<Request> requests_of(const DoctorInput& input, std::uint32_t device) {
  std::vector<Request> out;
  std::unordered_map<std::uint64_t, std::uint32_t> streams;
  for (std::size_t i = 0; i < input.trace.events.size(); ++i) {
    const replay::Event& e = input.trace.events[i];
    if (e.device != device || e.action != replay::Action::alloc) {
      continue;
    }
    const auto [it, fresh] = streams.emplace(e.stream, static_cast<std::uint32_t>(streams.size()));
    out.push_back(Request{i, e.bytes, it->second, input.facts.site_of(e.id)});
  }
  return out;
}

Match match_requests(const std::vector<Request>& a, const std::vector<Request>& b, bool by_site) {
  Match m;
  m.by_site = by_site;
  if (auto pairs = myers(keys_of(a, by_site), keys_of(b, by_site), kMaxEdits)) {
    m.pairs = std::move(*pairs);
  } else {
    m.by_position = true;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      m.pairs.emplace_back(i, i);
    }
  }
  m.only_a = a.size() - m.pairs.size();
  m.only_b = b.size() - m.pairs.size();
  return m;
}

}  // namespace memstress::doctor
