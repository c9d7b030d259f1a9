// One conformance suite for every allocator peer that runs on the simulated device: no two live blocks
// overlap, statistics stay consistent, and long randomized sequences agree with a reference model of
// what is live. tests/gpu/test_allocator_conformance.cpp runs the same checks with real memory.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "harness/alloc/factory.hpp"
#include "harness/alloc/live_blocks.hpp"
#include "harness/alloc/plugin_allocator.hpp"
#include "harness/core/error.hpp"
#include "harness/memory/sim_backend.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

class Conformance : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Allocator> make(DeviceBackend& dev, std::string conf = {}) {
    AllocatorSpec spec;
    spec.name = GetParam();
    spec.conf = AllocConfig::parse(conf, "conf");
    return make_allocator(spec, dev);
  }
};

std::int64_t stat_or(const MemoryStats& s, const std::string& key, std::int64_t fallback) {
  const auto it = s.find(key);
  return it == s.end() ? fallback : it->second;
}

// The reference model: what is live, by address, and what was asked for.
struct Model {
  std::map<std::uintptr_t, std::uint64_t> live;  // address -> requested bytes
  std::uint64_t requested = 0;

  void add(void* p, std::uint64_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const auto next = live.lower_bound(a);
    ASSERT_TRUE(next == live.end() || a + bytes <= next->first) << "overlaps the next live block";
    if (next != live.begin()) {
      const auto prev = std::prev(next);
      ASSERT_LE(prev->first + prev->second, a) << "overlaps the previous live block";
    }
    ASSERT_EQ(a % 256, 0U) << "not 256-byte aligned";
    live.emplace(a, bytes);
    requested += bytes;
  }
  void remove(std::uintptr_t a) {
    requested -= live.at(a);
    live.erase(a);
  }
};

void check_invariants(const Allocator& alloc, const Model& model, const SimBackend& dev) {
  const MemoryStats s = alloc.memory_stats();
  const std::int64_t allocated = s.at("allocated_bytes.all.current");
  const std::int64_t reserved = s.at("reserved_bytes.all.current");
  const std::int64_t active = stat_or(s, "active_bytes.all.current", allocated);
  EXPECT_LE(allocated, active);
  EXPECT_LE(active, reserved);
  EXPECT_GE(allocated, static_cast<std::int64_t>(model.requested));
  EXPECT_EQ(stat_or(s, "requested_bytes.all.current", static_cast<std::int64_t>(model.requested)),
            static_cast<std::int64_t>(model.requested));
  EXPECT_LE(s.at("allocated_bytes.all.peak"), s.at("reserved_bytes.all.peak"));
  // The device is charged at least what the allocator says it reserved.
  EXPECT_GE(static_cast<std::int64_t>(dev.mem_info().total - dev.mem_info().free), reserved);
}

TEST_P(Conformance, RandomSequencesMatchTheReferenceModel) {
  SimBackend dev(4 * kGiB);
  auto alloc = make(dev);
  Model model;
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> log_size(9.0, 27.0);  // 512 B .. 128 MiB, log-uniform
  std::vector<std::uintptr_t> order;
  for (int op = 0; op < 20000; ++op) {
    const bool do_alloc = order.empty() || (rng() % 100 < 55 && model.requested < 2 * kGiB);
    if (do_alloc) {
      const auto bytes = static_cast<std::uint64_t>(std::exp2(log_size(rng)));
      const StreamRef stream{rng() % 3};
      void* p = alloc->allocate(bytes, stream);
      model.add(p, bytes);
      if (::testing::Test::HasFatalFailure()) {
        return;
      }
      order.push_back(reinterpret_cast<std::uintptr_t>(p));
    } else {
      const std::size_t i = rng() % order.size();
      alloc->deallocate(reinterpret_cast<void*>(order[i]));  // NOLINT(performance-no-int-to-ptr)
      model.remove(order[i]);
      order[i] = order.back();
      order.pop_back();
    }
    if (op % 997 == 0) {
      check_invariants(*alloc, model, dev);
    }
  }
  check_invariants(*alloc, model, dev);
  for (const std::uintptr_t a : order) {
    alloc->deallocate(reinterpret_cast<void*>(a));  // NOLINT(performance-no-int-to-ptr)
  }
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(stat_or(s, "active_bytes.all.current", 0), 0);
  EXPECT_EQ(stat_or(s, "inactive_split_bytes.all.current", 0), 0);
  alloc->empty_cache();
  EXPECT_EQ(alloc->memory_stats().at("reserved_bytes.all.current"), 0);
  EXPECT_EQ(dev.mem_info().free, 4 * kGiB);
}

TEST_P(Conformance, OutOfMemoryIsAnErrorAndTheAllocatorRecovers) {
  SimBackend dev(256 * kMiB);
  auto alloc = make(dev);
  std::vector<void*> held;
  try {
    for (int i = 0; i < 100; ++i) {
      held.push_back(alloc->allocate(30 * kMiB));
    }
    FAIL() << "256 MiB held 100 x 30 MiB";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos);
  }
  EXPECT_GE(held.size(), 7U);
  EXPECT_EQ(alloc->memory_stats().at("num_ooms"), 1);
  for (void* p : held) {
    alloc->deallocate(p);
  }
  void* big = alloc->allocate(200 * kMiB);  // needs the cache given back
  alloc->deallocate(big);
}

// try_allocate is allocate without the throw: the same blocks, a refusal as no value (counted as an OOM),
// its explanation the one OutOfMemoryError carries, and 0 bytes what allocate gives, not a refusal.
TEST_P(Conformance, TryAllocateRefusesWhereAllocateThrows) {
  struct Outcome {
    void* ptr = nullptr;
    std::string refusal;  // empty: granted
  };
  const auto run = [&](bool trying) {
    SimBackend dev(256 * kMiB);
    auto alloc = make(dev);
    std::vector<Outcome> outcomes;
    for (int i = 0; i < 12; ++i) {
      Outcome o;
      if (trying) {
        const std::optional<void*> p = alloc->try_allocate(30 * kMiB, {}, &o.refusal);
        o.ptr = p.value_or(nullptr);
        EXPECT_EQ(p.has_value(), o.refusal.empty());
      } else {
        try {
          o.ptr = alloc->allocate(30 * kMiB);
        } catch (const OutOfMemoryError& e) {
          o.refusal = e.what();
        }
      }
      outcomes.push_back(o);
    }
    EXPECT_FALSE(alloc->try_allocate(64 * kGiB).has_value());  // no explanation asked for
    const std::optional<void*> none = alloc->try_allocate(0);
    EXPECT_TRUE(none.has_value());
    alloc->deallocate(none.value_or(nullptr));
    EXPECT_EQ(alloc->memory_stats().at("num_ooms"),
              1 + std::count_if(outcomes.begin(), outcomes.end(),
                                [](const Outcome& o) { return !o.refusal.empty(); }));
    for (const Outcome& o : outcomes) {
      alloc->deallocate(o.ptr);
    }
    return outcomes;
  };
  const std::vector<Outcome> thrown = run(false);
  const std::vector<Outcome> tried = run(true);
  ASSERT_EQ(thrown.size(), tried.size());
  EXPECT_FALSE(tried.back().refusal.empty()) << "256 MiB held 12 x 30 MiB";
  for (std::size_t i = 0; i < tried.size(); ++i) {
    EXPECT_EQ(tried[i].ptr, thrown[i].ptr) << i;
    EXPECT_EQ(tried[i].refusal, thrown[i].refusal) << i;
  }
}

TEST_P(Conformance, ManyThreadsOnTheirOwnAndSharedStreams) {
  SimBackend dev(16 * kGiB);
  auto alloc = make(dev);
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::vector<std::vector<void*>> handoff(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      std::vector<void*> mine;
      const StreamRef stream{t < 6 ? static_cast<std::uintptr_t>(t + 1) : 100};  // two threads share one
      for (int op = 0; op < 5000; ++op) {
        if (mine.empty() || rng() % 2 == 0) {
          mine.push_back(alloc->allocate(512 + rng() % (4 * kMiB), stream));
        } else {
          const std::size_t i = rng() % mine.size();
          alloc->deallocate(mine[i]);
          mine[i] = mine.back();
          mine.pop_back();
        }
      }
      handoff[static_cast<std::size_t>(t)] = std::move(mine);  // freed by another thread below
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  threads.clear();
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (void* p : handoff[static_cast<std::size_t>((t + 1) % kThreads)]) {
        alloc->deallocate(p);
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  const MemoryStats s = alloc->memory_stats();
  EXPECT_EQ(s.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(stat_or(s, "allocation.all.current", 0), 0);
  alloc->empty_cache();
  EXPECT_EQ(dev.mem_info().free, 16 * kGiB);
}

// The plugin is examples/allocator-plugin's caching plugin, which takes its memory from the simulated
// device through memstress_plugin_bind: a plugin's whole path through the seam, on a CPU-only machine.
INSTANTIATE_TEST_SUITE_P(Peers, Conformance,
                         ::testing::Values("caching", "expandable", "direct",
                                           std::string("plugin:") + MEMSTRESS_CACHING_PLUGIN),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param.starts_with("plugin:") ? std::string("plugin")
                                                                          : param_info.param;
                         });

}  // namespace
}  // namespace memstress

namespace memstress {
namespace {

// A library that hands out a block still allocated (a plugin's bug) fails the run, naming it.
TEST(LiveBlocks, ABlockHandedOutTwiceIsACheckFailure) {
  LiveBlocks live;
  int storage = 0;
  live.add(&storage, 64, StreamRef{}, "plugin:liba.so");
  try {
    live.add(&storage, 64, StreamRef{}, "plugin:liba.so");
    FAIL() << "accepted twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), ExitCode::check_failed);
    EXPECT_NE(std::string(e.what()).find("plugin:liba.so: handed out"), std::string::npos) << e.what();
  }
  EXPECT_EQ(live.held().current, 64);
  EXPECT_EQ(live.take(&storage, "plugin:liba.so").bytes, 64U);
  EXPECT_THROW(static_cast<void>(live.take(&storage, "plugin:liba.so")), InputError);
}

// A free that fails (an event or stream call of the GPU, say) puts the block back, still live: it is neither
// lost nor counted as returned, and a second free can still return it.
TEST(LiveBlocks, AFailedFreeKeepsTheBlock) {
  LiveBlocks live;
  int storage = 0;
  live.add(&storage, 64, StreamRef{}, "rmm-pool");
  EXPECT_THROW(
      live.release(&storage, "rmm-pool",
                   [](const LiveBlocks::Block&) { throw std::runtime_error("cudaEventRecord failed"); }),
      std::runtime_error);
  EXPECT_EQ(live.count(), 1U);
  EXPECT_EQ(live.held().current, 64);
  EXPECT_EQ(live.held().allocated, 64);  // counted once, as allocated and never freed
  EXPECT_EQ(live.held().freed, 0);
  std::size_t freed = 0;
  live.release(&storage, "rmm-pool", [&](const LiveBlocks::Block& block) { freed = block.bytes; });
  EXPECT_EQ(freed, 64U);
  EXPECT_EQ(live.count(), 0U);
  EXPECT_EQ(live.held().current, 0);
  EXPECT_EQ(live.held().freed, 64);
}

// A request the pluggable-allocator interface's ssize_t cannot carry never reaches the plugin: it is out of
// memory, counted as one.
TEST(PluginAllocator, ARequestBeyondSsizeMaxIsOutOfMemory) {
  SimBackend dev(16 * kGiB);
  const auto alloc = make_allocator(std::string("plugin:") + MEMSTRESS_CACHING_PLUGIN, dev);
  EXPECT_THROW(static_cast<void>(alloc->allocate(std::numeric_limits<std::size_t>::max() - 1)),
               OutOfMemoryError);
  EXPECT_EQ(alloc->memory_stats().at("num_ooms"), 1);
  EXPECT_EQ(alloc->memory_stats().at("allocated_bytes.all.current"), 0);
}

// plugin:PATH[:ALLOC:FREE]: a path that is a file is taken whole, colons and all; else the last two fields
// name the functions.
TEST(PluginName, APathWithColonsAndNamedFunctions) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "memstress-plugin-name";
  std::filesystem::create_directories(dir);
  const std::filesystem::path odd = dir / "lib:odd.so";
  std::ofstream(odd) << "not a library";
  const PluginSpec whole = parse_plugin_name("plugin:" + odd.string(), "--allocator");
  EXPECT_EQ(whole.path, odd.string());
  EXPECT_EQ(whole.alloc_fn, "my_malloc");
  const PluginSpec named = parse_plugin_name("plugin:" + odd.string() + ":a_fn:f_fn", "--allocator");
  EXPECT_EQ(named.path, odd.string());
  EXPECT_EQ(named.alloc_fn, "a_fn");
  EXPECT_EQ(named.free_fn, "f_fn");
  EXPECT_THROW(static_cast<void>(parse_plugin_name("plugin:" + (dir / "missing.so").string(), "--allocator")),
               InputError);
  AllocatorSpec spec;
  spec.name = "plugin:" + odd.string();
  EXPECT_THROW(validate(spec), InputError);  // validate loads it: not a shared library
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memstress
