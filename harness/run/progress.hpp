#pragma once

// Progress of a run on stderr. After each case: one log line "[i/n] case: verdict" with the elapsed time
// and an estimate of what is left (the mean case time so far times the cases left), written always (CI logs
// keep it) unless quiet. While a case runs, and only when stderr is a terminal: a live line "[i/n] running
// case, elapsed, ~left" that the next line overwrites (carriage return and erase-line), so that a long case
// shows it is alive without filling a log file with control characters.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace memstress {

class Progress {
 public:
  // `total`: the cases of the whole run (all allocators). `live`: draw the live line; by default when
  // stderr is a terminal.
  Progress(std::size_t total, bool quiet);
  Progress(std::size_t total, bool quiet, bool live);

  void starting(std::string_view title);
  void finished(std::string_view title, std::string_view verdict, std::string_view reason);

  // "1m02s", "3.4s": for the lines above, exposed for tests.
  [[nodiscard]] static std::string duration(double seconds);

 private:
  std::size_t total_;
  std::size_t done_ = 0;
  bool quiet_;
  bool live_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace memstress
