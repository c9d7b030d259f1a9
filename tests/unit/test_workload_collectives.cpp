// The collectives workload on the CPU: nccl-tests' byte counts and bus factors, the expected values the
// check kernel compares with (against a plain simulation of each collective over every rank's input), the
// exactness of those values in every dtype, and the axes (the skip on the simulated device: with transfers).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "apps/flag_names.hpp"
#include "harness/core/error.hpp"
#include "harness/run/plan.hpp"
#include "kernels/collective_values.hpp"
#include "suites/registry.hpp"
#include "suites/support/collectives_ops.hpp"
#include "workload_run.hpp"

namespace memstress {
namespace {

using kernels::Collective;
using kernels::CollectiveLayout;
using kernels::DType;

constexpr Collective kAll[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                               Collective::broadcast,  Collective::alltoall,   Collective::sendrecv};

TEST(CollectiveMath, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::all_reduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::all_reduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::all_gather, 8), 0.875);
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::reduce_scatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::alltoall, 2), 0.5);
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(kernels::bus_factor(Collective::sendrecv, 8), 1.0);
  for (const Collective c : kAll) {
    if (c != Collective::broadcast && c != Collective::sendrecv) {
      EXPECT_DOUBLE_EQ(kernels::bus_factor(c, 1), 0.0) << suites::to_string(c);
    }
  }
}

TEST(CollectiveMath, AlgbwIsSizeOverTimeAndBusbwScalesIt) {
  // 256 MiB all_reduce in 1 ms on 2 ranks: 268.4 GB/s, busbw the same (factor 1).
  const suites::Bandwidth bw = suites::bandwidth(Collective::all_reduce, 268435456.0, 1e-3, 2);
  EXPECT_NEAR(bw.algbw, 268.435456, 1e-9);
  EXPECT_NEAR(bw.busbw, 268.435456, 1e-9);
  const suites::Bandwidth ag = suites::bandwidth(Collective::all_gather, 4e9, 0.01, 8);
  EXPECT_NEAR(ag.algbw, 400.0, 1e-9);
  EXPECT_NEAR(ag.busbw, 350.0, 1e-9);
}

TEST(CollectiveMath, LayoutsFollowNcclTestsSizeConventions) {
  // 1 MiB of floats on 4 ranks: 262144 elements, chunk 65536.
  const auto ar = kernels::collective_layout(Collective::all_reduce, 1 << 20, DType::f32, 4, 1);
  EXPECT_EQ(ar.send_count, 262144U);
  EXPECT_EQ(ar.recv_count, 262144U);
  const auto ag = kernels::collective_layout(Collective::all_gather, 1 << 20, DType::f32, 4, 3);
  EXPECT_EQ(ag.send_count, 65536U);  // each rank contributes a quarter
  EXPECT_EQ(ag.recv_count, 262144U);
  EXPECT_EQ(ag.in_place_offset, 3U * 65536U);
  const auto rs = kernels::collective_layout(Collective::reduce_scatter, 1 << 20, DType::f32, 4, 2);
  EXPECT_EQ(rs.send_count, 262144U);
  EXPECT_EQ(rs.recv_count, 65536U);
  EXPECT_EQ(rs.in_place_offset, 2U * 65536U);
  const auto a2a = kernels::collective_layout(Collective::alltoall, 1 << 20, DType::f16, 4, 0);
  EXPECT_EQ(a2a.send_count, 524288U);
  EXPECT_EQ(a2a.chunk, 131072U);
  // The size column is the larger buffer, rounded down to whole chunks.
  const auto odd = kernels::collective_layout(Collective::all_gather, 1000, DType::f64, 3, 0);
  EXPECT_EQ(odd.size_count(), 123U);  // 125 elements, 41 per rank
  EXPECT_EQ(kernels::collective_layout(Collective::broadcast, 1000, DType::f64, 3, 0).size_count(), 125U);
}

// Every rank's receive buffer by plain simulation of the collective over every rank's input.
std::vector<std::int64_t> simulate(Collective c, int n, int rank, const CollectiveLayout& l,
                                   std::uint64_t salt, std::uint64_t m) {
  const auto in = [&](int q, std::uint64_t k) { return kernels::input_value(q, k, salt, m); };
  std::vector<std::int64_t> out(l.recv_count, 0);
  for (std::uint64_t k = 0; k < l.recv_count; ++k) {
    switch (c) {
      case Collective::all_reduce:
        for (int q = 0; q < n; ++q) {
          out[k] += in(q, k);
        }
        break;
      case Collective::reduce_scatter:
        for (int q = 0; q < n; ++q) {
          out[k] += in(q, static_cast<std::uint64_t>(rank) * l.chunk + k);
        }
        break;
      case Collective::all_gather:  // rank q's send buffer lands at q x chunk
        out[k] = in(static_cast<int>(k / l.chunk), k % l.chunk);
        break;
      case Collective::alltoall:  // chunk q comes from rank q, which sent its chunk `rank`
        out[k] = in(static_cast<int>(k / l.chunk), static_cast<std::uint64_t>(rank) * l.chunk + k % l.chunk);
        break;
      case Collective::broadcast:
        out[k] = in(0, k);
        break;
      case Collective::sendrecv:
        out[k] = in((rank + n - 1) % n, k);
        break;
    }
  }
  return out;
}

TEST(CollectiveMath, ExpectedValuesMatchASimulationOfEveryCollective) {
  for (const Collective c : kAll) {
    for (const int n : {1, 2, 3, 8}) {
      for (int rank = 0; rank < n; ++rank) {
        const CollectiveLayout l = kernels::collective_layout(c, 4096, DType::f32, n, rank);
        const std::uint64_t m = kernels::value_modulus(c, n);
        const std::uint64_t salt = 7;
        const auto want = simulate(c, n, rank, l, salt, m);
        const kernels::CollectiveCase cc{c, n, rank, l.chunk, salt, m};
        for (std::uint64_t k = 0; k < l.recv_count; ++k) {
          ASSERT_EQ(kernels::expected_value(cc, k), want[k])
              << suites::to_string(c) << " n=" << n << " rank=" << rank << " k=" << k;
        }
      }
    }
  }
}

// Integers up to 256 are exact in bfloat16 (8 significant bits), so in every other dtype too.
TEST(CollectiveMath, ValuesAreSmallPositiveIntegersExactInBfloat16) {
  for (const Collective c : kAll) {
    for (const int n : {1, 2, 8, 64, 256}) {
      const std::uint64_t m = kernels::value_modulus(c, n);
      const std::uint64_t largest = kernels::is_reduction(c) ? m * static_cast<std::uint64_t>(n) : m;
      EXPECT_LE(largest, 256U) << suites::to_string(c) << " n=" << n;
      EXPECT_GE(m, 1U);
    }
  }
  static_assert(kernels::input_value(0, 0, 0, 8) == 1);
  static_assert(kernels::input_value(1, 6, 0, 8) == 2);  // 1 + (6 + 3) % 8
}

TEST(CollectiveMath, AStaleResultDiffersFromTheNextRepetitions) {
  const CollectiveLayout l = kernels::collective_layout(Collective::all_reduce, 4096, DType::f32, 2, 0);
  const std::uint64_t m = kernels::value_modulus(Collective::all_reduce, 2);
  const kernels::CollectiveCase first{Collective::all_reduce, 2, 0, l.chunk, 0, m};
  const kernels::CollectiveCase next{Collective::all_reduce, 2, 0, l.chunk, 1, m};
  int differ = 0;
  for (std::uint64_t k = 0; k < 64; ++k) {
    differ += kernels::expected_value(first, k) != kernels::expected_value(next, k) ? 1 : 0;
  }
  EXPECT_GT(differ, 32);
}

TEST(CollectiveNames, ParseAndReject) {
  EXPECT_EQ(suites::parse_collective("reduce_scatter"), Collective::reduce_scatter);
  EXPECT_EQ(suites::parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(kernels::dtype_size(suites::parse_dtype("half")), 2U);
  EXPECT_EQ(kernels::dtype_size(suites::parse_dtype("double")), 8U);
  EXPECT_THROW((void)suites::parse_collective("allreduce"), InputError);
  EXPECT_THROW((void)suites::parse_dtype("fp8"), InputError);
  for (const std::string_view name : suites::collective_names()) {
    EXPECT_EQ(suites::to_string(suites::parse_collective(name)), name);
  }
}

std::vector<std::string> case_labels(const std::vector<std::string>& overrides, bool full = false) {
  PlanRequest request;
  request.names = app::run_plan_names();  // the messages name run's flags
  request.workloads = {"collectives"};
  request.full = full;
  for (const std::string& o : overrides) {
    request.overrides.push_back(ParamOverride::parse(o, "-p"));
  }
  const Registry registry = suites::builtin_registry();
  return testing::labels(plan_cases(registry, request));
}

TEST(CollectivesPlan, AlltoallAndSendrecvAreNeverInPlace) {
  const auto cases = case_labels({"place=out,in", "pressure=none", "bytes=1M"});
  EXPECT_EQ(cases.size(), 6U + 4U);
  for (const std::string& c : cases) {
    if (c.find("place=in") != std::string::npos) {
      EXPECT_EQ(c.find("alltoall"), std::string::npos) << c;
      EXPECT_EQ(c.find("sendrecv"), std::string::npos) << c;
    }
  }
}

TEST(CollectivesPlan, QuickJobIsSmallAndFullSweepsEveryDtypeTo4G) {
  // 6 collectives out of place x 2 pressures at 256M, float only: the default job stays short.
  EXPECT_EQ(case_labels({}).size(), 12U);
  const auto full = case_labels({"collective=all_reduce", "place=out", "pressure=none"}, true);
  EXPECT_EQ(full.size(), 5U * 7U);
  EXPECT_NE(full.back().find("bytes=4G"), std::string::npos) << full.back();
  for (const char* dtype : {"float", "half", "bfloat16", "int32", "double"}) {
    EXPECT_TRUE(std::any_of(full.begin(), full.end(), [&](const std::string& c) {
      return c.find(std::string("dtype=") + dtype) != std::string::npos;
    })) << dtype;
  }
}

TEST(CollectivesPlan, HostAndGraphTimingTakeItersEventsDoesNot) {
  // events picks its own count: one case, not one per iters value; host and graph one per value.
  const auto cases =
      case_labels({"collective=all_reduce", "pressure=none", "timing=events,host,graph", "iters=20,50"});
  EXPECT_EQ(cases.size(), 5U);
  for (const std::string& c : cases) {
    if (c.find("timing=events") != std::string::npos) {
      EXPECT_NE(c.find("iters=20"), std::string::npos) << c;
    }
  }
}

TEST(CollectivesPlan, RotateIsOneBufferByDefaultAndASizeWhenGiven) {
  // Note [Rotation]: nccl-tests' -e as `rotate`; 0 (one buffer) and a warm L2 unless asked for.
  for (const std::string& c : case_labels({"collective=all_reduce", "pressure=none"})) {
    EXPECT_NE(c.find(" rotate=0B l2=warm"), std::string::npos) << c;
  }
  for (const std::string& c : case_labels({"collective=all_reduce", "pressure=none", "rotate=64M"})) {
    EXPECT_NE(c.find(" rotate=64M"), std::string::npos) << c;
  }
  EXPECT_THROW(static_cast<void>(case_labels({"collective=all_reduce", "rotate=-1"})), InputError);
  EXPECT_THROW(static_cast<void>(case_labels({"collective=all_reduce", "rotate=lots"})), InputError);
  EXPECT_THROW(static_cast<void>(case_labels({"collective=all_reduce", "l2=cold"})), InputError);
}

TEST(CollectivesPlan, ItersWithEventsTimingAloneIsAUsageErrorNotAnEmptyPlan) {
  // Every combination left out: exit 2 with the workload named, not a run of nothing.
  try {
    static_cast<void>(case_labels({"collective=all_reduce", "pressure=none", "iters=50"}));
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("-p collectives: none of the combinations"), std::string::npos)
        << e.what();
  }
  // The same for an in-place alltoall.
  EXPECT_THROW(static_cast<void>(case_labels({"collective=alltoall", "place=in"})), InputError);
}

TEST(CollectivesPlan, NcclTestsSweepFromEightBytesOnNcclBuffers) {
  PlanRequest request;
  request.workloads = {"collectives"};
  request.sizes = std::vector<std::uint64_t>{8, 16, 1ULL << 20U};
  request.overrides = {ParamOverride::parse("pressure=none", "-p"),
                       ParamOverride::parse("timing=host,graph", "-p"),
                       ParamOverride::parse("buffers=ncclmem", "-p")};
  // 6 collectives x 2 modes x 3 sizes; the sizes under one element per rank skip when they run.
  EXPECT_EQ(plan_cases(suites::builtin_registry(), request).size(), 36U);
}

TEST(NcclMemoryPlan, QuickJobOneCaseFullSweepsTheChannels) {
  PlanRequest request;
  request.workloads = {"nccl_memory"};
  EXPECT_EQ(plan_cases(suites::builtin_registry(), request).size(), 1U);
  request.full = true;
  const auto full = testing::labels(plan_cases(suites::builtin_registry(), request));
  ASSERT_EQ(full.size(), 4U);
  EXPECT_NE(full.front().find("cycles=100"), std::string::npos) << full.front();
}

TEST(CollectivesPlan, SizesComeFromTheBytesAxis) {
  PlanRequest request;
  request.workloads = {"collectives"};
  request.sizes = std::vector<std::uint64_t>{1ULL << 20U, 4ULL << 20U};
  request.overrides = {ParamOverride::parse("collective=all_reduce", "-p"),
                       ParamOverride::parse("place=out", "-p"), ParamOverride::parse("pressure=none", "-p")};
  EXPECT_EQ(plan_cases(suites::builtin_registry(), request).size(), 2U);
}
}  // namespace
}  // namespace memstress
