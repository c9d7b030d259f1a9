#include "harness/run/progress.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "harness/core/text_table.hpp"
#include "harness/core/ticker.hpp"

namespace memstress {
namespace {

constexpr std::size_t kMinTitle = 16;  // the case's part of a live line is never cut shorter than this

ProgressOptions options_of(std::size_t total, bool quiet, bool live) {
  ProgressOptions o;
  o.total = total;
  o.quiet = quiet;
  o.live = live;
  o.columns = terminal_columns();
  return o;
}

}  // namespace

std::size_t terminal_columns() noexcept {
  winsize size{};
  if (isatty(fileno(stderr)) == 0 || ioctl(fileno(stderr), TIOCGWINSZ, &size) != 0) {
    return 0;
  }
  return size.ws_col;
}

Progress::Progress(std::size_t total, bool quiet) : Progress(total, quiet, isatty(fileno(stderr)) != 0) {}

Progress::Progress(std::size_t total, bool quiet, bool live) : Progress(options_of(total, quiet, live)) {}

Progress::Progress(ProgressOptions options) : options_(std::move(options)), start_(0) {
  options_.live = options_.live && !options_.quiet;
  start_ = now();
}

Progress::~Progress() = default;

double Progress::now() const {
  if (options_.clock) {
    return options_.clock();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Progress::write(const std::string& text) const {
  if (options_.write) {
    options_.write(text);
    return;
  }
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

std::string Progress::duration(double seconds) {
  if (seconds < 60) {
    return fmt::format("{:.1f}s", seconds);
  }
  const auto whole = static_cast<long long>(std::llround(seconds));
  return whole < 3600 ? fmt::format("{}m{:02}s", whole / 60, whole % 60)
                      : fmt::format("{}h{:02}m", whole / 3600, (whole % 3600) / 60);
}

std::optional<double> Progress::seconds_left(std::size_t done, std::size_t total, double done_at,
                                             std::optional<double> running) {
  if (done == 0) {
    return std::nullopt;
  }
  const double mean = done_at / static_cast<double>(done);
  const std::size_t not_done = total > done ? total - done : 0;
  if (!running || not_done == 0) {
    return mean * static_cast<double>(not_done);
  }
  return mean * static_cast<double>(not_done - 1) + std::max(0.0, mean - *running);
}

void Progress::draw() {
  const double t = now();
  const auto left = seconds_left(done_, options_.total, done_at_, t - case_start_);
  const std::string before = fmt::format("memstress: [{}/{}] running ", done_ + 1, options_.total);
  const std::string after =
      fmt::format(" for {} ({} elapsed{})", duration(t - case_start_), duration(t - start_),
                  left ? fmt::format(", ~{} left", duration(*left)) : std::string());
  // Short of the last column (a line that reaches it wraps on some terminals); the allocator is kept.
  const std::size_t used = before.size() + tag_.size() + after.size() + 1;
  const std::string title =
      options_.columns == 0
          ? case_
          : fit_text(case_, std::max(kMinTitle, options_.columns > used ? options_.columns - used : 0));
  write(fmt::format("\r{}{}{}{}\x1b[K", before, title, tag_, after));
}

void Progress::starting(std::string_view title, std::string_view allocator) {
  const std::lock_guard lock(mutex_);
  case_start_ = now();
  case_ = title;
  tag_ = options_.name_allocator ? fmt::format(" [{}]", allocator) : std::string();
  if (!options_.live) {
    return;
  }
  draw();
  ticker_ = std::make_unique<Ticker>(options_.tick, [this] {
    const std::lock_guard tick_lock(mutex_);
    draw();
  });
}

void Progress::finished(std::string_view verdict, std::string_view reason) {
  ticker_.reset();  // joined: no draw after this
  const std::lock_guard lock(mutex_);
  ++done_;
  done_at_ = now() - start_;
  if (options_.quiet) {
    return;
  }
  const auto left = seconds_left(done_, options_.total, done_at_, std::nullopt);
  write(fmt::format("{}memstress: [{}/{}] {}: {}{} ({} elapsed{})\n", options_.live ? "\r\x1b[K" : "", done_,
                    options_.total, case_ + tag_, verdict,
                    reason.empty() ? std::string() : fmt::format(": {}", reason), duration(done_at_),
                    left && *left > 0 ? fmt::format(", ~{} left", duration(*left)) : ""));
}

}  // namespace memstress
