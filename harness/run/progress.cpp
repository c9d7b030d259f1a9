#include "harness/run/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace memstress {
namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Progress::Progress(std::size_t total, bool quiet) : Progress(total, quiet, isatty(fileno(stderr)) != 0) {}

Progress::Progress(std::size_t total, bool quiet, bool live)
    : total_(total), quiet_(quiet), live_(live && !quiet), start_(std::chrono::steady_clock::now()) {}

std::string Progress::duration(double seconds) {
  if (seconds < 60) {
    return fmt::format("{:.1f}s", seconds);
  }
  const auto whole = static_cast<long long>(std::llround(seconds));
  return whole < 3600 ? fmt::format("{}m{:02}s", whole / 60, whole % 60)
                      : fmt::format("{}h{:02}m", whole / 3600, (whole % 3600) / 60);
}

void Progress::starting(std::string_view title) {
  if (!live_) {
    return;
  }
  const double elapsed = since(start_);
  const std::string left = done_ == 0
                               ? std::string()
                               : fmt::format(", ~{} left", duration(elapsed / static_cast<double>(done_) *
                                                                    static_cast<double>(total_ - done_)));
  fmt::print(stderr, "\rmemstress: [{}/{}] running {} ({} elapsed{})\x1b[K", done_ + 1, total_, title,
             duration(elapsed), left);
  std::fflush(stderr);
}

void Progress::finished(std::string_view title, std::string_view verdict, std::string_view reason) {
  ++done_;
  if (quiet_) {
    return;
  }
  const double elapsed = since(start_);
  const std::size_t left_cases = total_ > done_ ? total_ - done_ : 0;
  const std::string left = left_cases == 0
                               ? std::string()
                               : fmt::format(", ~{} left", duration(elapsed / static_cast<double>(done_) *
                                                                    static_cast<double>(left_cases)));
  fmt::print(stderr, "{}memstress: [{}/{}] {}: {}{} ({} elapsed{})\n", live_ ? "\r\x1b[K" : "", done_, total_,
             title, verdict, reason.empty() ? std::string() : fmt::format(": {}", reason), duration(elapsed),
             left);
}

}  // namespace memstress
