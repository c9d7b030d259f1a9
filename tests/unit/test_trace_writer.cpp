// TraceWriter and read_trace: the memstress trace v1 format (harness/trace/trace_format.md).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/trace/trace_reader.hpp"
#include "harness/trace/trace_writer.hpp"

namespace memstress {
namespace {

namespace fs = std::filesystem;

class TraceFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("memstress-trace-" + std::to_string(::getpid()) + "-" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  [[nodiscard]] fs::path file(const std::string& name) const { return dir_ / name; }

  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  fs::path dir_;
};

constexpr std::string_view kHeader = "# memstress-trace v1\nseq,time_ns,action,id,bytes,stream,device\n";

// Parses `body` (after the two header lines) and returns the InputError's message, or "" if none.
std::string parse_error(const std::string& text) {
  std::istringstream in(text);
  try {
    static_cast<void>(parse_trace(in, "t.csv"));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string with_header(std::string_view body) {
  return std::string(kHeader) + std::string(body);
}

TEST_F(TraceFiles, HeaderIsOnDiskAsSoonAsTheWriterExists) {
  const TraceWriter writer(file("t.csv"), "sim:1G");
  EXPECT_EQ(slurp(file("t.csv")), kHeader);
  EXPECT_EQ(writer.events_written(), 0U);
  EXPECT_TRUE(read_trace(file("t.csv")).events.empty());
}

TEST_F(TraceFiles, BuffersUntilFlushLinesThenWritesWholeLines) {
  TraceWriter writer(file("t.csv"), "sim:1G", 2);
  EXPECT_EQ(writer.write(TraceAction::alloc, 0, 100, 0), 0U);
  EXPECT_EQ(slurp(file("t.csv")), kHeader);  // still buffered
  EXPECT_EQ(writer.write(TraceAction::alloc, 1, 200, 3), 1U);
  const Trace trace = read_trace(file("t.csv"));
  ASSERT_EQ(trace.events.size(), 2U);
  EXPECT_EQ(trace.events[1].bytes, 200U);
  EXPECT_EQ(trace.events[1].stream, 3U);
  EXPECT_EQ(trace.events[1].device, "sim:1G");
}

TEST_F(TraceFiles, AnOomLineIsFlushedAtOnce) {
  TraceWriter writer(file("t.csv"), "cuda:0", 1000);
  writer.write(TraceAction::alloc, 0, 100, 0);
  writer.write(TraceAction::oom, std::nullopt, 1ULL << 40, 5);
  const Trace trace = read_trace(file("t.csv"));
  ASSERT_EQ(trace.events.size(), 2U);
  EXPECT_EQ(trace.events[1].action, TraceAction::oom);
  EXPECT_FALSE(trace.events[1].id.has_value());
  EXPECT_EQ(trace.events[1].bytes, 1ULL << 40);
}

TEST_F(TraceFiles, DestructionAndMoveKeepEveryLine) {
  {
    TraceWriter first(file("t.csv"), "sim:1G");
    first.write(TraceAction::alloc, 0, 10, 0);
    TraceWriter second(std::move(first));
    second.write(TraceAction::free, 0, 10, 0);
    TraceWriter third(file("other.csv"), "sim:1G");
    third = std::move(second);  // closes other.csv (empty), takes over t.csv
    third.write(TraceAction::alloc, 1, 20, 0);
  }
  const Trace trace = read_trace(file("t.csv"));
  ASSERT_EQ(trace.events.size(), 3U);
  for (std::uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(trace.events[i].seq, i);
  }
  EXPECT_EQ(slurp(file("other.csv")), kHeader);
}

TEST_F(TraceFiles, UnwritablePathIsAnInputErrorNamingIt) {
  const fs::path bad = file("no-such-dir") / "t.csv";
  try {
    const TraceWriter writer(bad, "sim:1G");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
  try {
    static_cast<void>(read_trace(bad));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad.string()), std::string::npos) << e.what();
  }
}

TEST_F(TraceFiles, ConcurrentWritersGiveOrderedCompleteLines) {
  constexpr std::uint64_t kThreads = 8;
  constexpr std::uint64_t kPerThread = 2000;
  {
    TraceWriter writer(file("t.csv"), "sim:1G", 64);
    std::vector<std::jthread> threads;
    for (std::uint64_t t = 0; t < kThreads; ++t) {
      threads.emplace_back([&writer, t] {
        for (std::uint64_t i = 0; i < kPerThread; ++i) {
          const std::uint64_t id = t * kPerThread + i;
          writer.write(TraceAction::alloc, id, id + 1, t);
          writer.write(TraceAction::free, id, id + 1, t);
        }
      });
    }
  }
  const Trace trace = read_trace(file("t.csv"));  // also checks that every free follows its alloc
  ASSERT_EQ(trace.events.size(), 2 * kThreads * kPerThread);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    ASSERT_EQ(trace.events[i].seq, i);
    if (i > 0) {
      ASSERT_LE(trace.events[i - 1].time_ns, trace.events[i].time_ns);
    }
  }
}

TEST(TraceReader, ParsesEveryV1FieldAndSkipsWhatItDoesNotKnow) {
  std::istringstream in(
      "# memstress-trace v1\r\n"
      "seq,time_ns,action,id,bytes,stream,device,extra\r\n"
      "0,5,alloc,7,4096,0,cuda:1,x\r\n"
      "# a comment\n"
      "\n"
      "3,9,segment_alloc,,2097152,0,cuda:1,\n"
      "4,9,free_requested,7,,0,cuda:1,\n"
      "9,12,free,7,4096,0,cuda:1,y\n"
      "10,12,oom,,18446744073709551615,2,cuda:1,\n");
  const Trace trace = parse_trace(in, "t.csv");
  ASSERT_EQ(trace.events.size(), 3U);
  EXPECT_EQ(trace.events[0], (TraceEvent{0, 5, TraceAction::alloc, 7, 4096, 0, "cuda:1"}));
  EXPECT_EQ(trace.events[1], (TraceEvent{9, 12, TraceAction::free, 7, 4096, 0, "cuda:1"}));
  EXPECT_EQ(trace.events[2], (TraceEvent{10, 12, TraceAction::oom, std::nullopt, UINT64_MAX, 2, "cuda:1"}));
  EXPECT_EQ(trace.skipped_actions.at("segment_alloc"), 1U);
  EXPECT_EQ(trace.skipped_actions.at("free_requested"), 1U);
}

TEST(TraceReader, RejectsBadHeaders) {
  EXPECT_NE(parse_error("").find("t.csv: empty file"), std::string::npos);
  EXPECT_NE(parse_error("seq,time_ns\n").find("t.csv:1: not a memstress trace"), std::string::npos);
  EXPECT_NE(parse_error("# memstress-trace v2\n").find("t.csv:1: unsupported trace version 'v2'"),
            std::string::npos);
  EXPECT_NE(parse_error("# memstress-trace v1\n").find("t.csv:1: no column header"), std::string::npos);
  EXPECT_NE(parse_error("# memstress-trace v1\nseq,time,action,id,bytes,stream,device\n")
                .find("t.csv:2: bad column header"),
            std::string::npos);
}

TEST(TraceReader, RejectsBadLinesNamingFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"0,1,Alloc,0,1,0,sim:1G\n", "t.csv:3: bad action 'Alloc'"},
      {"0,1,,0,1,0,sim:1G\n", "t.csv:3: bad action ''"},
      {"0,1,alloc,0,12x,0,sim:1G\n", "t.csv:3: column 'bytes': '12x' is not a non-negative integer"},
      {"0,1,alloc,0,-1,0,sim:1G\n", "t.csv:3: column 'bytes': '-1'"},
      {"0,1,alloc,0,1,18446744073709551616,sim:1G\n", "t.csv:3: column 'stream'"},
      {"0,1,alloc,,1,0,sim:1G\n", "t.csv:3: column 'id': ''"},
      {"0,1,alloc,0,1,0\n", "t.csv:3: 6 fields where the header has 7 columns"},
      {"0,1,alloc,0,1,0,\n", "t.csv:3: column 'device' is empty"},
      {"0,1,alloc,0,1,0,sim\t1G\n", "t.csv:3: column 'device': 'sim\t1G' holds a control character"},
      {"0,1,oom,4,1,0,sim:1G\n", "t.csv:3: an oom line has no id"},
      {"0,1,alloc,0,1,0,sim:1G\n1,1,free,5,1,0,sim:1G\n", "t.csv:4: free of id 5, which is not live"},
      {"0,1,alloc,0,1,0,sim:1G\n1,1,free,0,1,0,sim:1G\n2,1,free,0,1,0,sim:1G\n",
       "t.csv:5: free of id 0, which is not live"},
      {"0,1,alloc,0,1,0,sim:1G\n1,1,alloc,0,1,0,sim:1G\n",
       "t.csv:4: alloc of id 0, which is already live (allocated on line 3)"},
      {"0,1,alloc,0,8,0,sim:1G\n1,1,free,0,9,0,sim:1G\n", "t.csv:4: free of id 0 names 9 bytes"},
      {"5,1,alloc,0,8,0,sim:1G\n5,1,free,0,8,0,sim:1G\n", "t.csv:4: seq 5 does not follow seq 5"},
      // sizes no device has: one event, or the sum of what is live at once (which must not wrap)
      {"0,1,alloc,0,9223372036854775808,0,sim:1G\n",
       "t.csv:3: column 'bytes': 9223372036854775808 is more memory"},
      {"0,1,alloc,0,140737488355328,0,sim:1G\n1,1,alloc,1,140737488355328,0,sim:1G\n"
       "2,1,alloc,2,140737488355328,0,sim:1G\n",
       "t.csv:5: 422212465065984 bytes live at once, more memory than any device has"},
  };
  for (const auto& [body, expected] : cases) {
    const std::string message = parse_error(with_header(body));
    EXPECT_NE(message.find(expected), std::string::npos) << "input: " << body << "\nmessage: " << message;
  }
  // The last line of a crashed trace, cut short, is reported with its line number.
  EXPECT_NE(
      parse_error(with_header("0,1,alloc,0,8,0,sim:1G\n1,2,fr")).find("t.csv:4: the line has no newline"),
      std::string::npos);
  // …even where the cut leaves a line that would parse ("cuda:10" cut to "cuda:1").
  EXPECT_NE(parse_error(with_header("0,1,alloc,0,8,0,cuda:1")).find("t.csv:3: the line has no newline"),
            std::string::npos);
}

}  // namespace
}  // namespace memstress
