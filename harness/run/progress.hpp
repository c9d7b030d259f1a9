#pragma once

// Progress of a run on stderr. After each case: one log line "[i/n] case: verdict" with the elapsed time
// and an estimate of what is left, written always (CI logs keep it) unless quiet. While a case runs, when
// the line is live (by default when stderr is a terminal; `run --progress always` forces it): a line
// "[i/n] running case for 4.1s (12.3s elapsed, ~40s left)" that is redrawn every second by a ticker thread
// (harness/core/ticker.hpp) and that the next line overwrites (carriage return and erase-line), so that a
// long case shows it is alive without filling a log file with control characters; on a terminal its case
// is cut ("...") so that the line fits the terminal's width (a line that wrapped could not be redrawn in
// place). When several allocators run, every line names the case's allocator: "leak retained=0.05
// [expandable]".
//
// Note [The estimate]. Cases differ in length, but nothing better than the mean is known before they run:
// what is left is the mean time of the cases finished so far times the cases not yet finished, less what
// the running case has already used of its mean share (never below that of the cases after it). There is
// no estimate before the first case finishes.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace memstress {

class Ticker;

struct ProgressOptions {
  std::size_t total = 0;        // the cases of the whole run (all allocators)
  bool quiet = false;           // no lines at all
  bool live = false;            // draw the live line while a case runs
  bool name_allocator = false;  // several allocators run: each line names the case's
  std::size_t columns = 0;      // the live line fits in this many columns (0: any width)
  std::chrono::milliseconds tick{1000};
  // For tests: seconds on some steady clock (null: std::chrono::steady_clock), and where lines go (null:
  // stderr, flushed).
  std::function<double()> clock;
  std::function<void(std::string_view)> write;
};

// The width of the terminal on stderr, or 0 where stderr is not a terminal.
std::size_t terminal_columns() noexcept;

class Progress {
 public:
  // `live`: by default when stderr is a terminal (then its lines fit the terminal_columns()).
  Progress(std::size_t total, bool quiet);
  Progress(std::size_t total, bool quiet, bool live);
  explicit Progress(ProgressOptions options);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  Progress(Progress&&) = delete;
  Progress& operator=(Progress&&) = delete;

  void starting(std::string_view title, std::string_view allocator);
  void finished(std::string_view verdict, std::string_view reason);

  // "1m02s", "3.4s": for the lines above, exposed for tests.
  [[nodiscard]] static std::string duration(double seconds);
  // Note [The estimate]: seconds left, with `done` of `total` cases finished `done_at` seconds into the run
  // and the next one running for `running` seconds (none: between cases); nothing before the first ends.
  [[nodiscard]] static std::optional<double> seconds_left(std::size_t done, std::size_t total, double done_at,
                                                          std::optional<double> running);

 private:
  [[nodiscard]] double now() const;
  void write(const std::string& text) const;
  void draw();  // the live line; with mutex_ held

  ProgressOptions options_;
  double start_;
  std::mutex mutex_;                // the ticker draws from its own thread
  std::size_t done_ = 0;            // cases finished
  double done_at_ = 0;              // seconds into the run when the last one finished
  double case_start_ = 0;           // when the running case started
  std::string case_;                // the running case
  std::string tag_;                 // " [expandable]" where allocators are named
  std::unique_ptr<Ticker> ticker_;  // alive while a case runs and the line is live
};

}  // namespace memstress
