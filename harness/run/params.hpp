#pragma once

// Parameter axes. A workload declares its axes (name, type, default values), with designated initialisers
// (`{.name = "alloc_prob", .type = ParamType::real, .defaults = {"0.55"}, .minimum = 0, .maximum = 1,
// .help = "..."}`: the members below are in the order those name them); the command line may
// replace an axis's values (`-p streams=1,2,4` or `-p smoke.bytes=64M,1G`, and `-b/-e/-f` for the
// `bytes` axis); the harness runs the Cartesian product. Values are validated and put in canonical form
// before anything runs, so a typo is a usage error (exit 2) and "64M" and "67108864" are one case.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memstress {

enum class ParamType { integer, bytes, real, boolean, choice, text };
std::string_view to_string(ParamType type) noexcept;

struct ParamSpec {
  std::string name{};
  ParamType type = ParamType::integer;
  std::vector<std::string> defaults{};       // the quick default job
  std::vector<std::string> full_defaults{};  // with --full; empty means the same as defaults
  std::vector<std::string> choices{};        // for ParamType::choice
  double minimum = 0;                        // smallest value for integer, bytes and real axes
  // Largest value for them. Every integer axis has a finite one (a count of buffers, operations or
  // epochs past it would run out of host memory or run for days); `memstress list` shows both bounds.
  double maximum = std::numeric_limits<double>::infinity();
  std::string help{};

  // Canonical form of `value`; throws InputError naming `what` when it does not fit the type, is not
  // finite (a number axis: nan, inf) or lies outside [minimum, maximum]. A size's canonical form is exact
  // (exact_bytes): the case runs the bytes asked for.
  [[nodiscard]] std::string canonical(std::string_view value, std::string_view what) const;
  // A bound as the axis's values are written ("16", "4K", "0.99").
  [[nodiscard]] std::string bound_text(double bound) const;
};

// The name of the axis that -b/-e/-f sweep.
inline constexpr std::string_view kSizeAxis = "bytes";

// One case's values, in the workload's axis order.
class ParamSet {
 public:
  ParamSet() = default;
  explicit ParamSet(std::vector<std::pair<std::string, std::string>> values) : values_(std::move(values)) {}

  [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& values() const noexcept {
    return values_;
  }
  [[nodiscard]] const std::string& text(std::string_view name) const;  // throws std::out_of_range
  [[nodiscard]] std::int64_t integer(std::string_view name) const;
  [[nodiscard]] std::uint64_t bytes(std::string_view name) const;
  [[nodiscard]] double real(std::string_view name) const;
  [[nodiscard]] bool boolean(std::string_view name) const;

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// `[workload.]name=v1,v2,...` as given on the command line (`memstress run -p`).
struct ParamOverride {
  std::string workload;  // empty: every selected workload that has the axis
  std::string name;
  std::vector<std::string> values;

  // Throws InputError naming `what` (the command's flag) and `text` for text that is not of that form.
  static ParamOverride parse(std::string_view text, std::string_view what);
};

}  // namespace memstress
