#include "harness/accept/profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "harness/accept/bounds.hpp"
#include "harness/core/error.hpp"
#include "harness/core/input_file.hpp"
#include "harness/core/json_text.hpp"

namespace memstress {
namespace {

// " (line 7)" where yaml-cpp knows where the node is.
std::string line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? std::string() : fmt::format(" (line {})", mark.line + 1);
}

std::string_view kind_of(const YAML::Node& node) {
  return node.IsMap() ? "a map" : node.IsSequence() ? "a list" : node.IsNull() ? "empty" : "a value";
}

// " (line 3: `gpu: *nowhere`)": the text of the line a parse error points at, so that an error yaml-cpp words
// without a key (an alias to an anchor never defined) names the key too. Long lines are cut.
std::string quoted_line(const std::string& yaml, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) {
    return "";
  }
  std::size_t start = 0;
  for (int line = 0; line < mark.line; ++line) {
    start = yaml.find('\n', start);
    if (start == std::string::npos) {
      return "";
    }
    ++start;
  }
  std::string text = yaml.substr(start, yaml.find('\n', start) - start);
  const std::size_t first = text.find_first_not_of(" \t");
  text = first == std::string::npos ? std::string() : text.substr(first);
  constexpr std::size_t kMaxShown = 80;
  if (text.size() > kMaxShown) {
    text = text.substr(0, kMaxShown) + "...";
  }
  return text.empty() ? "" : fmt::format(" (line {}: `{}`)", mark.line + 1, text);
}

// Note [Keys of a profile]. yaml-cpp keeps the first of two equal keys and ignores keys nobody asks for, so
// a typo (`factr: 0.9`) or a key written twice would be judged with a value the user never meant. Every map
// is read through check_keys: its keys must be single values, each at most once, and (`allowed` not
// empty) among those a profile knows. Every value is read through the helpers below, which name the key
// and its line when it is of the wrong kind (an alias to a map where a value belongs, say).
void check_keys(const YAML::Node& map, std::initializer_list<std::string_view> allowed,
                const std::string& what) {
  if (!map.IsMap()) {
    throw InputError(
        fmt::format("{}: must be a map of keys to values, not {}{}", what, kind_of(map), line_of(map)));
  }
  std::vector<std::pair<std::string, YAML::Mark>> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) {
      throw InputError(
          fmt::format("{}: a key must be a name, not {}{}", what, kind_of(kv.first), line_of(kv.first)));
    }
    const std::string key = kv.first.Scalar();
    const auto before = std::find_if(seen.begin(), seen.end(), [&](const auto& k) { return k.first == key; });
    if (before != seen.end()) {
      throw InputError(fmt::format("{}: key `{}` is given twice (lines {} and {})", what, key,
                                   before->second.line + 1, kv.first.Mark().line + 1));
    }
    seen.emplace_back(key, kv.first.Mark());
    if (allowed.size() > 0 && std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw InputError(fmt::format("{}: unknown key `{}`{}; expected {}", what, key, line_of(kv.first),
                                   fmt::join(allowed, ", ")));
    }
  }
}

// Text as to_yaml (`accept --train --write`) can write it back. YAML is Unicode, but yaml-cpp passes bytes
// that are not UTF-8 through and its emitter writes each as U+FFFD; and it writes a control character as
// it is in a plain scalar, where a trailing '\r' then reads as the end of the line. Either way a profile
// changed on its way through training (found by fuzz/profile.cpp; fuzz/regressions/profile/), so such text
// is refused, naming where. Tabs are text; line breaks only where `multiline` (the description).
std::string checked_text(std::string text, const std::string& where, bool multiline = false) {
  if (valid_utf8(text) != text) {
    throw InputError(fmt::format("{}: not UTF-8 text", where));
  }
  const auto control = [&](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t' && !(multiline && c == '\n')) || byte == 0x7f;
  };
  if (std::any_of(text.begin(), text.end(), control)) {
    throw InputError(fmt::format("{}: holds a control character", where));
  }
  return text;
}

// The value of `key` as text (checked_text); nullopt when absent. Throws InputError naming the key for a
// map or a list.
std::optional<std::string> scalar(const YAML::Node& node, const char* key, const std::string& what,
                                  bool multiline = false) {
  const YAML::Node value = node[key];
  if (!value) {
    return std::nullopt;
  }
  if (!value.IsScalar()) {
    throw InputError(
        fmt::format("{}: `{}` must be a single value, not {}{}", what, key, kind_of(value), line_of(value)));
  }
  return checked_text(value.Scalar(), fmt::format("{}: `{}`", what, key), multiline);
}

std::vector<std::pair<std::string, std::string>> string_map(const YAML::Node& node, const char* key,
                                                            const std::string& what) {
  std::vector<std::pair<std::string, std::string>> out;
  const YAML::Node map = node[key];
  if (!map) {
    return out;
  }
  const std::string where = fmt::format("{}.{}", what, key);
  check_keys(map, {}, where);
  for (const auto& kv : map) {
    if (!kv.second.IsScalar()) {
      throw InputError(fmt::format("{}: `{}` must be a single value, not {}{}", where, kv.first.Scalar(),
                                   kind_of(kv.second), line_of(kv.second)));
    }
    std::string name = checked_text(kv.first.Scalar(), where);
    std::string value = checked_text(kv.second.Scalar(), fmt::format("{}.{}", where, name));
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

std::string required(const YAML::Node& node, const char* key, const std::string& what) {
  if (!node[key] || node[key].IsNull()) {
    throw InputError(fmt::format("{}: needs `{}`", what, key));
  }
  return scalar(node, key, what).value();
}

// A finite number; nullopt when absent or null (`golden: null`: to be trained).
std::optional<double> number(const YAML::Node& node, const char* key, const std::string& what) {
  if (!node[key] || node[key].IsNull()) {
    return std::nullopt;
  }
  const std::string text = scalar(node, key, what).value();
  double value = 0;
  try {
    value = node[key].as<double>();
  } catch (const YAML::Exception&) {
    throw InputError(
        fmt::format("{}: `{}` must be a number, not '{}'{}", what, key, text, line_of(node[key])));
  }
  if (!std::isfinite(value)) {
    throw InputError(
        fmt::format("{}: `{}` must be a finite number, not '{}'{}", what, key, text, line_of(node[key])));
  }
  return value;
}

int min_ranks(const YAML::Node& node, const std::string& what) {
  const std::optional<double> n = number(node, "min_ranks", what);
  if (!n) {
    return 1;
  }
  if (!(*n >= 1 && *n <= 1e6) || *n != static_cast<double>(static_cast<int>(*n))) {
    throw InputError(fmt::format("{}: min_ranks must be a whole number, 1 or more", what));
  }
  return static_cast<int>(*n);
}

bool flag(const YAML::Node& node, const char* key, const std::string& what) {
  if (!scalar(node, key, what)) {
    return false;
  }
  try {
    return node[key].as<bool>();
  } catch (const YAML::Exception&) {
    throw InputError(fmt::format("{}: `{}` must be true or false{}", what, key, line_of(node[key])));
  }
}

}  // namespace

Profile parse_profile(const std::string& yaml, const std::string& name, std::string_view train) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp bounds its recursive parse itself (DepthGuard, 500 levels) and calls such a file only "bad
    // file"; its mark is where its scanner stood, not where the nesting went too deep.
    throw InputError(fmt::format("{}: nested {} or more levels deep: refused", name, e.depth()));
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: not YAML: {}{}", name, e.what(), quoted_line(yaml, e.mark)));
  }
  if (!root.IsMap()) {
    throw InputError(fmt::format("{}: not an acceptance profile (a map with name, gpu, runs, checks)", name));
  }
  Profile p;
  try {
    check_keys(root, {"name", "gpu", "description", "runs", "checks"}, name);
    p.name = required(root, "name", name);
    p.gpu = required(root, "gpu", name);
    p.description = scalar(root, "description", name, /*multiline=*/true).value_or("");
    if (!root["runs"] || !root["runs"].IsSequence() || !root["checks"] || !root["checks"].IsSequence()) {
      throw InputError(fmt::format("{}: needs `runs` and `checks`, each a list", name));
    }
    for (std::size_t i = 0; i < root["runs"].size(); ++i) {
      const YAML::Node r = root["runs"][i];
      const std::string what = fmt::format("{}: runs[{}]", name, i);
      check_keys(r, {"workload", "params", "min_ranks", "in_turn"}, what);
      p.runs.push_back({required(r, "workload", what), string_map(r, "params", what), min_ranks(r, what),
                        flag(r, "in_turn", what)});
    }
    for (std::size_t i = 0; i < root["checks"].size(); ++i) {
      const YAML::Node c = root["checks"][i];
      const std::string what = fmt::format("{}: checks[{}]", name, i);
      check_keys(c,
                 {"name", "workload", "where", "metric", "golden", "factor", "min", "max", "spread",
                  "min_ranks", "per_host", "source"},
                 what);
      AcceptCheck check;
      check.train = train;
      check.name = required(c, "name", what);
      check.workload = required(c, "workload", what);
      check.metric = required(c, "metric", what);
      check.where = string_map(c, "where", what);
      check.golden = number(c, "golden", what);
      check.factor = number(c, "factor", what).value_or(0.75);
      check.min = number(c, "min", what);
      check.max = number(c, "max", what);
      check.spread = number(c, "spread", what);
      if (check.spread && !(*check.spread > 0 && *check.spread < 100)) {
        throw InputError(fmt::format("{} ({}): spread is a percentage above 0 and below 100, not {}{}", what,
                                     check.name, *check.spread, line_of(c["spread"])));
      }
      check.min_ranks = min_ranks(c, what);
      check.per_host = flag(c, "per_host", what);
      check.source = scalar(c, "source", what).value_or("");
      // Note [Bounds that mean something] (bounds.hpp).
      if (const std::optional<BoundProblem> problem = bound_problem(check)) {
        throw InputError(fmt::format("{} ({}): {}{}{}", what, check.name, problem->why,
                                     line_of(c[problem->key]), problem->hint));
      }
      if (!check.golden && !check.min && !check.max && !check.spread &&
          !(c["golden"] && c["golden"].IsNull())) {
        throw InputError(
            fmt::format("{} ({}): needs golden (with factor), min, max or spread", what, check.name));
      }
      p.checks.push_back(std::move(check));
    }
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
  return p;
}

Profile load_profile(const std::filesystem::path& path, std::string_view what, std::string_view train) {
  // A regular file of at most kMaxProfileBytes, opened without blocking (Note [Inputs that cannot hang or
  // exhaust]): a FIFO, /dev/zero or a sparse file of gigabytes is refused in one line, never read.
  std::string text;
  try {
    text = read_input_file(path, kMaxProfileBytes, "an acceptance profile");
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} {}: {}", what, path.string(), e.what()));
  }
  return parse_profile(text, path.string(), train);
}

}  // namespace memstress
