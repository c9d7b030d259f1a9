#include "harness/alloc/alloc_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <utility>
#include <vector>

#include "harness/core/error.hpp"

namespace memstress {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;

// PyTorch's lexer: ',' ':' '[' ']' are tokens of their own, spaces vanish.
std::vector<std::string> lex(std::string_view text) {
  std::vector<std::string> tokens;
  std::string word;
  for (const char c : text) {
    if (c == ' ' || c == '\t') {
      continue;
    }
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) {
        tokens.push_back(std::move(word));
        word.clear();
      }
      tokens.emplace_back(1, c);
    } else {
      word += c;
    }
  }
  if (!word.empty()) {
    tokens.push_back(std::move(word));
  }
  return tokens;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view what) : tokens_(lex(text)), text_(text), what_(what) {}

  AllocConfig run() {
    AllocConfig config;
    config.text = std::string(text_);
    while (i_ < tokens_.size()) {
      const std::size_t first = i_;
      const std::string key = next("a key");
      expect(":");
      if (key == "max_split_size_mb") {
        config.max_split_size = megabytes(key, 20);
      } else if (key == "max_non_split_rounding_mb") {
        config.max_non_split_rounding = megabytes(key, 20);
      } else if (key == "roundup_power2_divisions") {
        divisions(config);
      } else if (key == "garbage_collection_threshold") {
        const double v = number(key);
        if (!(v > 0.0 && v < 1.0)) {
          fail(fmt::format("garbage_collection_threshold must be between 0 and 1 (exclusive), not {}", v));
        }
        config.garbage_collection_threshold = v;
      } else if (key == "expandable_segments") {
        config.expandable_segments = boolean(key);
      } else if (key == "per_process_memory_fraction") {
        const double v = number(key);
        if (!(v > 0.0 && v <= 1.0)) {
          fail(fmt::format("per_process_memory_fraction must be in (0, 1], not {}", v));
        }
        config.memory_fraction = v;
      } else if (key == "release_threshold_mb") {
        config.release_threshold = megabytes(key, 0);
      } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
                 key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse") {
        static_cast<void>(boolean(key));  // PyTorch's; nothing to do here
      } else if (key == "backend") {
        config.backend = next(key);
      } else if (key == "pinned_num_register_threads" || key == "pinned_reserve_segment_size_mb") {
        static_cast<void>(next(key));
      } else {
        fail(
            fmt::format("unknown key '{}' (known: max_split_size_mb, max_non_split_rounding_mb, "
                        "roundup_power2_divisions, garbage_collection_threshold, expandable_segments, "
                        "per_process_memory_fraction, release_threshold_mb)",
                        key));
      }
      std::string part;
      for (std::size_t t = first; t < i_; ++t) {
        part += tokens_[t];
      }
      config.parts.push_back(std::move(part));
      if (i_ < tokens_.size()) {
        expect(",");
      }
    }
    return config;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError(fmt::format("{} '{}': {}", what_, text_, why));
  }
  std::string next(std::string_view expected) {
    if (i_ >= tokens_.size()) {
      fail(fmt::format("expected {} at the end", expected));
    }
    return tokens_[i_++];
  }
  void expect(std::string_view token) {
    const std::string got = next(fmt::format("'{}'", token));
    if (got != token) {
      fail(fmt::format("expected '{}' but found '{}'", token, got));
    }
  }
  template <typename T>
  [[nodiscard]] T parse_as(const std::string& word, std::string_view key) const {
    T v{};
    const auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc{} || p != word.data() + word.size()) {
      fail(fmt::format("{}: '{}' is not a number", key, word));
    }
    return v;
  }
  double number(std::string_view key) { return parse_as<double>(next(key), key); }
  std::uint64_t megabytes(std::string_view key, std::uint64_t minimum) {
    const auto mb = parse_as<std::uint64_t>(next(key), key);
    if (mb < minimum) {
      fail(fmt::format("{} must be at least {} (MiB), not {}", key, minimum, mb));
    }
    return mb > AllocConfig::kUnlimited / kMiB ? AllocConfig::kUnlimited : mb * kMiB;
  }
  bool boolean(std::string_view key) {
    const std::string v = next(key);
    if (v == "True" || v == "true") {
      return true;
    }
    if (v == "False" || v == "false") {
      return false;
    }
    fail(fmt::format("{} must be True or False, not '{}'", key, v));
  }
  [[nodiscard]] std::uint32_t power_of_two_or_zero(const std::string& word) const {
    const auto d = parse_as<std::uint32_t>(word, "roundup_power2_divisions");
    if (d != 0 && !std::has_single_bit(d)) {
      fail(fmt::format("roundup_power2_divisions: {} is not a power of 2", d));
    }
    return d;
  }
  // "N" (every interval) or "[K:D,...,>:D]" with K sizes in MiB (powers of 2). The first entry also
  // covers the intervals below it; ">" covers every interval after the last one named (PyTorch 2.9's
  // reading; 2.x before it also overwrote the last named interval).
  void divisions(AllocConfig& config) {
    if (i_ < tokens_.size() && tokens_[i_] == "[") {
      ++i_;
      bool first = true;
      std::size_t last = 0;
      while (true) {
        const std::string key = next("a size in MiB or '>'");
        expect(":");
        const std::uint32_t d = power_of_two_or_zero(next("divisions"));
        if (key == ">") {
          for (std::size_t j = first ? 0 : last + 1; j < AllocConfig::kRoundupIntervals; ++j) {
            config.roundup_power2_divisions[j] = d;
          }
        } else {
          const auto mb = parse_as<std::uint64_t>(key, "roundup_power2_divisions");
          if (mb == 0 || !std::has_single_bit(mb)) {
            fail(fmt::format("roundup_power2_divisions: the size {} (MiB) is not a power of 2", mb));
          }
          const std::size_t idx = std::min<std::size_t>(static_cast<std::size_t>(std::bit_width(mb) - 1),
                                                        AllocConfig::kRoundupIntervals - 1);
          for (std::size_t j = first ? 0 : idx; j <= idx; ++j) {
            config.roundup_power2_divisions[j] = d;
          }
          last = idx;
        }
        first = false;
        const std::string sep = next("',' or ']'");
        if (sep == "]") {
          break;
        }
        if (sep != ",") {
          fail(fmt::format("expected ',' or ']' but found '{}'", sep));
        }
      }
      return;
    }
    const std::uint32_t d = power_of_two_or_zero(next("roundup_power2_divisions"));
    config.roundup_power2_divisions.fill(d);
  }

  std::vector<std::string> tokens_;
  std::string_view text_;
  std::string_view what_;
  std::size_t i_ = 0;
};

}  // namespace

AllocConfig AllocConfig::parse(std::string_view text, std::string_view what) {
  return Parser(text, what).run();
}

std::uint32_t AllocConfig::divisions_for(std::uint64_t size) const noexcept {
  const int lg = static_cast<int>(std::bit_width(size)) - 1;
  const int idx = std::clamp(lg - 20, 0, static_cast<int>(kRoundupIntervals) - 1);
  return roundup_power2_divisions[static_cast<std::size_t>(idx)];
}

}  // namespace memstress
