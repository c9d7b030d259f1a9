#include "harness/doctor/live_walk.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace memstress::doctor {

LiveWalk walk_live(const replay::ReplayTrace& trace, std::uint32_t device, const SnapshotFacts& facts) {
  LiveWalk w;
  w.device = device;
  std::unordered_map<std::uint64_t, std::size_t> open;  // id -> its interval
  std::unordered_set<std::uint64_t> streams;
  std::int64_t live = 0;
  std::int64_t best = -1;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const replay::Event& e = trace.events[i];
    if (e.device != device) {
      continue;
    }
    const auto position = static_cast<std::uint32_t>(w.event_index.size());
    if (e.action == replay::Action::alloc) {
      open[e.id] = w.intervals.size();
      w.intervals.push_back(Interval{e.id, e.bytes, position, Interval::kLiveAtEnd, facts.site_of(e.id)});
      live += static_cast<std::int64_t>(e.bytes);
      w.most_live = std::max(w.most_live, open.size());
      streams.insert(e.stream);
    } else if (e.action == replay::Action::free) {
      if (const auto it = open.find(e.id); it != open.end()) {
        Interval& interval = w.intervals[it->second];
        interval.end = position;
        live -= static_cast<std::int64_t>(interval.bytes);
        open.erase(it);
      }
    }
    w.event_index.push_back(i);
    w.live.push_back(live);
    if (live > best) {
      best = live;
      w.peak = position;
    }
  }
  w.streams = streams.size();
  return w;
}

std::vector<SiteShare> sites_live_at(const LiveWalk& walk, std::size_t position) {
  std::map<std::int32_t, SiteShare> by_site;
  for (const Interval& interval : walk.intervals) {
    if (interval.begin > position) {
      break;  // intervals are in order of their allocs
    }
    if (interval.end <= position) {
      continue;
    }
    SiteShare& share = by_site[interval.site];
    share.site = interval.site;
    share.bytes += interval.bytes;
    ++share.count;
    share.largest = std::max(share.largest, interval.bytes);
  }
  std::vector<SiteShare> shares;
  shares.reserve(by_site.size());
  for (const auto& [site, share] : by_site) {
    shares.push_back(share);
  }
  std::stable_sort(shares.begin(), shares.end(),
                   [](const SiteShare& a, const SiteShare& b) { return a.bytes > b.bytes; });
  return shares;
}

}  // namespace memstress::doctor
