#pragma once

// What a FAIL line lists (the GPUs a check lacks, the rows that failed): the first few named, the rest
// counted, so that a job of a thousand dead ranks still prints one readable line.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <string>
#include <vector>

namespace memstress {

class NamedList {
 public:
  static constexpr std::size_t kShown = 6;

  // Whether another item would still be named (make its text only then).
  [[nodiscard]] bool naming() const noexcept { return shown_.size() < kShown; }
  void add(std::string item) {
    if (naming()) {
      shown_.push_back(std::move(item));
    }
    ++count_;
  }
  // `n` more items, none of them named.
  void count(std::size_t n) noexcept { count_ += n; }

  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  // "A; B; and 3 more"
  [[nodiscard]] std::string text() const {
    std::string out = fmt::format("{}", fmt::join(shown_, "; "));
    if (count_ > shown_.size()) {
      out += fmt::format("{}and {} more", shown_.empty() ? "" : "; ", count_ - shown_.size());
    }
    return out;
  }

 private:
  std::vector<std::string> shown_;
  std::size_t count_ = 0;
};

}  // namespace memstress
