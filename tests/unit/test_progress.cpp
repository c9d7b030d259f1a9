// The progress line (harness/run/progress.hpp) on a fake clock: the live line is redrawn by its ticker
// while a case runs, with the case's time, the run's and a sane estimate; it names the allocator when
// several run; nothing is drawn after the case ends. And the ticker itself (harness/core/ticker.hpp).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "harness/core/ticker.hpp"
#include "harness/run/progress.hpp"

namespace memstress {
namespace {

using namespace std::chrono_literals;

// What a Progress wrote, on a clock the test moves.
class Recorder {
 public:
  ProgressOptions options(std::size_t total) {
    ProgressOptions o;
    o.total = total;
    o.live = true;
    o.tick = 5ms;
    o.clock = [this] { return seconds_.load(); };
    o.write = [this](std::string_view text) {
      const std::lock_guard lock(mutex_);
      lines_.emplace_back(text);
    };
    return o;
  }
  void set_clock(double seconds) { seconds_ = seconds; }
  std::vector<std::string> lines() const {
    const std::lock_guard lock(mutex_);
    return lines_;
  }
  // Waits (up to 10 s) for a line that contains `text`.
  bool wait_for(const std::string& text) const {
    for (int i = 0; i < 2000; ++i) {
      for (const std::string& line : lines()) {
        if (line.find(text) != std::string::npos) {
          return true;
        }
      }
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

 private:
  std::atomic<double> seconds_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

TEST(Progress, DurationsReadLikeAClockEvenPastAMinute) {
  EXPECT_EQ(Progress::duration(0.04), "0.0s");
  EXPECT_EQ(Progress::duration(59.94), "59.9s");
  EXPECT_EQ(Progress::duration(60), "1m00s");
}

TEST(Progress, TheEstimateIsTheMeanCaseTimeLessWhatTheRunningCaseUsed) {
  EXPECT_EQ(Progress::seconds_left(0, 10, 0, 5.0), std::nullopt);  // nothing known yet
  EXPECT_DOUBLE_EQ(*Progress::seconds_left(2, 10, 20, std::nullopt), 80);
  EXPECT_DOUBLE_EQ(*Progress::seconds_left(2, 10, 20, 3.0), 77);   // 7 after it, 7 s left of this one's 10
  EXPECT_DOUBLE_EQ(*Progress::seconds_left(2, 10, 20, 15.0), 70);  // longer than the mean: never negative
  EXPECT_DOUBLE_EQ(*Progress::seconds_left(10, 10, 20, std::nullopt), 0);
}

TEST(Progress, TheLiveLineTicksWhileACaseRuns) {
  Recorder r;
  Progress progress(r.options(3));
  progress.starting("leak retained=0.05", "caching");
  ASSERT_TRUE(r.wait_for("running leak retained=0.05 for 0.0s (0.0s elapsed)"));
  r.set_clock(1.0);
  ASSERT_TRUE(r.wait_for("for 1.0s (1.0s elapsed)"));
  r.set_clock(6.6);
  ASSERT_TRUE(r.wait_for("for 6.6s (6.6s elapsed)"));
  EXPECT_EQ(r.lines().back().find("[caching]"), std::string::npos);  // one allocator: not named
  progress.finished("pass", "");
  const std::size_t after_finish = r.lines().size();
  EXPECT_EQ(r.lines().back(),
            "\r\x1b[Kmemstress: [1/3] leak retained=0.05: pass (6.6s elapsed, ~13.2s left)\n");
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(r.lines().size(), after_finish);  // the ticker is gone with the case
  // The second case: an estimate from the first.
  r.set_clock(8.6);
  progress.starting("leak retained=0", "caching");
  r.set_clock(10.6);
  // One case after this at the mean (6.6 s), and 4.6 s of this one's.
  ASSERT_TRUE(r.wait_for("[2/3] running leak retained=0 for 2.0s (10.6s elapsed, ~11.2s left)"));
}

TEST(Progress, SeveralAllocatorsAreNamed) {
  Recorder r;
  ProgressOptions o = r.options(2);
  o.name_allocator = true;
  Progress progress(o);
  progress.starting("leak retained=0.05", "expandable");
  ASSERT_TRUE(r.wait_for("running leak retained=0.05 [expandable] for"));
  progress.finished("skip", "needs a real GPU");
  EXPECT_NE(r.lines().back().find("[1/2] leak retained=0.05 [expandable]: skip: needs a real GPU"),
            std::string::npos);
}

TEST(Progress, OnANarrowTerminalTheCaseIsCutAndTheAllocatorAndTimesKept) {
  Recorder r;
  ProgressOptions o = r.options(1);
  o.columns = 80;
  o.name_allocator = true;
  Progress progress(o);
  const std::string title =
      "dataloader workers=thread producers=4 pin_threads=4 prefetch=2 bytes=32M pin=true dtype=uint8";
  progress.starting(title, "caching");
  r.set_clock(2.0);
  ASSERT_TRUE(r.wait_for("for 2.0s (2.0s elapsed)"));
  std::string line = r.lines().back();
  ASSERT_EQ(line.rfind('\r', 0), 0U);
  line = line.substr(1, line.size() - 1 - std::string("\x1b[K").size());  // what the terminal shows
  EXPECT_EQ(line.size(), 79U) << line;
  EXPECT_NE(line.find("running dataloader worker"), std::string::npos) << line;
  EXPECT_NE(line.find("... [caching] for 2.0s (2.0s elapsed)"), std::string::npos) << line;
  progress.finished("pass", "");
  EXPECT_NE(r.lines().back().find(title), std::string::npos);  // the log line keeps the whole case
}

TEST(Progress, WithoutTheLiveLineOnlyTheLineAfterEachCase) {
  Recorder r;
  ProgressOptions o = r.options(1);
  o.live = false;
  Progress progress(o);
  progress.starting("smoke", "caching");
  std::this_thread::sleep_for(30ms);
  EXPECT_TRUE(r.lines().empty());
  progress.finished("pass", "");
  ASSERT_EQ(r.lines().size(), 1U);
  EXPECT_EQ(r.lines()[0], "memstress: [1/1] smoke: pass (0.0s elapsed)\n");
  Recorder q;
  ProgressOptions quiet = q.options(1);
  quiet.quiet = true;
  Progress silent(quiet);
  silent.starting("smoke", "caching");
  silent.finished("pass", "");
  EXPECT_TRUE(q.lines().empty());
}

TEST(Ticker, CallsEveryPeriodUntilDestroyed) {
  std::atomic<int> ticks{0};
  {
    const Ticker ticker(2ms, [&] { ++ticks; });
    for (int i = 0; i < 2000 && ticks < 3; ++i) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_GE(ticks.load(), 3);
  }
  const int at_end = ticks.load();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ticks.load(), at_end);
}

TEST(Ticker, StopsAtOnceEvenWithALongPeriodAndSurvivesAThrowingTick) {
  const auto start = std::chrono::steady_clock::now();
  {
    const Ticker ticker(std::chrono::hours(1), [] {});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  std::atomic<int> ticks{0};
  {
    const Ticker ticker(1ms, [&] {
      ++ticks;
      throw std::runtime_error("tick");
    });
    for (int i = 0; i < 2000 && ticks < 2; ++i) {
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_GE(ticks.load(), 2);
}

}  // namespace
}  // namespace memstress
