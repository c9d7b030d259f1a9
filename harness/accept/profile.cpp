#include "harness/accept/profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "harness/core/error.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/units.hpp"

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

bool in_turn(const YAML::Node& node, const std::string& what) {
  if (!scalar(node, "in_turn", what)) {
    return false;
  }
  try {
    return node["in_turn"].as<bool>();
  } catch (const YAML::Exception&) {
    throw InputError(fmt::format("{}: `in_turn` must be true or false{}", what, line_of(node["in_turn"])));
  }
}

bool matches(const ResultRow& row, const AcceptCheck& check) {
  if (row.workload != check.workload) {
    return false;
  }
  return std::all_of(check.where.begin(), check.where.end(),
                     [&](const std::pair<std::string, std::string>& w) {
                       const auto it = row.params.find(w.first);
                       return it != row.params.end() && it->second == w.second;
                     });
}

// One matched row's value for a check: its metric's median, or its own share of a count (data errors; 1 for a
// row that did not pass).
struct RowValue {
  const ResultRow* row = nullptr;
  double value = 0;
};

struct Measured {
  double value = 0;
  bool higher_better = true;
  bool is_sum = false;  // verification.errors and verdict add their rows up
  std::string unit;
  std::size_t rows = 0;
  std::vector<RowValue> values;  // the rows that gave a value
};

// A check's figure in words: the health figures "..._below_max" count generations or lanes under the link's
// maximum, which the results record as "gen" and "lanes" (kept, so that runs compare across versions).
std::string shown_unit(std::string_view metric, const std::string& unit) {
  if (!metric.ends_with("_below_max")) {
    return unit;
  }
  return (unit == "gen" ? std::string("generations") : unit) + " below max";
}

std::optional<Measured> measure(const AcceptCheck& check, const AcceptRows& rows) {
  Measured m;
  for (const ResultRow& row : rows) {
    if (!matches(row, check)) {
      continue;
    }
    ++m.rows;
    if (check.metric == "verification.errors" || check.metric == "verdict") {
      m.higher_better = false;
      m.is_sum = true;
      const bool errors = check.metric == "verification.errors";
      m.unit = errors ? "data errors" : "rows not passed";
      const double v = errors ? static_cast<double>(row.errors) : (row.verdict == Verdict::pass ? 0.0 : 1.0);
      m.value += v;
      m.values.push_back({&row, v});
    } else if (const MetricResult* metric = row.metric(check.metric)) {
      if (std::isnan(metric->summary.median)) {  // written as null: not measured
        continue;
      }
      const double v = metric->summary.median;
      const bool higher = metric->better != Better::lower;
      m.value = m.values.empty() ? v : (higher ? std::min(m.value, v) : std::max(m.value, v));
      m.higher_better = higher;
      m.unit = shown_unit(check.metric, metric->unit);
      m.values.push_back({&row, v});
    }
  }
  return m.values.empty() ? std::nullopt : std::optional<Measured>(m);
}

// "55.1 GB/s", "1.5 GiB" (a byte count in human units), "0 data errors", "0.9369" (a ratio or share).
std::string with_unit(double v, const std::string& unit, int digits = 4) {
  if (v == 1 && (unit == "data errors" || unit == "rows not passed")) {
    return unit == "data errors" ? "1 data error" : "1 row not passed";
  }
  if ((unit == "bytes" || unit == "bytes/epoch") && v >= 0 && v < 1.8e19) {
    return human_bytes(static_cast<std::uint64_t>(v)) + (unit == "bytes" ? "" : "/epoch");
  }
  const std::string number = std::abs(v) >= 1e9   ? fmt::format("{:.{}g}G", v / 1e9, digits)
                             : std::abs(v) >= 1e6 ? fmt::format("{:.{}g}M", v / 1e6, digits)
                             : std::abs(v) >= 1e5 ? fmt::format("{:.{}g}k", v / 1e3, digits)
                                                  : fmt::format("{:.{}g}", v, digits);
  const bool plain = unit.empty() || unit == "ratio" || unit == "share" || unit == "count" || unit == "flag";
  return plain ? number : fmt::format("{} {}", number, unit);
}

// The bounds a value must meet, each as [lower or upper, value, how it was set].
struct Bound {
  bool at_least = true;
  double value = 0;
  std::string from;  // "0.75 x golden 55.03 GB/s", "" for an absolute bound
};

std::vector<Bound> bounds_of(const AcceptCheck& check, const Measured& m) {
  std::vector<Bound> out;
  if (check.golden) {
    const std::string golden = with_unit(*check.golden, m.unit);
    out.push_back(m.higher_better ? Bound{true, check.factor * *check.golden,
                                          fmt::format("{} x golden {}", check.factor, golden)}
                                  : Bound{false, *check.golden / check.factor,
                                          fmt::format("golden {} / {}", golden, check.factor)});
  }
  if (check.min) {
    out.push_back({true, *check.min, ""});
  }
  if (check.max) {
    out.push_back({false, *check.max, ""});
  }
  return out;
}

bool meets(double v, const std::vector<Bound>& bounds) {
  return std::all_of(bounds.begin(), bounds.end(),
                     [&](const Bound& b) { return b.at_least ? v >= b.value : v <= b.value; });
}

// Why a matched row could not measure the check's metric ("nvlink.errors (no NVLink is active on this GPU)"),
// from its kNotMeasured note; nullopt when no matched row says so.
std::optional<std::string> not_measured(const AcceptCheck& check, const AcceptRows& rows) {
  const std::string prefix = fmt::format("{}{} ", kNotMeasured, check.metric);
  for (const ResultRow& row : rows) {
    if (!matches(row, check)) {
      continue;
    }
    for (const std::string& note : row.notes) {
      if (note.rfind(prefix, 0) == 0) {
        return note.substr(kNotMeasured.size());
      }
    }
  }
  return std::nullopt;
}

bool on_one_gpu(const ResultRow& a, const ResultRow& b) {
  return a.rank == b.rank && a.gpu.uuid == b.gpu.uuid && a.gpu.index == b.gpu.index &&
         a.gpu.host == b.gpu.host;
}

// The rows to name in the line: on a fail, those that fail the bounds on their own (for a count, the rows
// that have any), else the worst one. Several rows of one GPU are named once, with their worst value.
std::vector<RowValue> named_rows(const Measured& m, const std::vector<Bound>& bounds, bool pass) {
  std::vector<RowValue> out;
  const auto worse = [&](double a, double b) { return m.higher_better ? a < b : a > b; };
  for (const RowValue& rv : m.values) {
    const bool bad = m.is_sum ? rv.value > 0 : !meets(rv.value, bounds);
    if (pass || !bad) {
      continue;
    }
    const auto same_gpu =
        std::find_if(out.begin(), out.end(), [&](const RowValue& o) { return on_one_gpu(*o.row, *rv.row); });
    if (same_gpu == out.end()) {
      out.push_back(rv);
    } else if (m.is_sum) {
      same_gpu->value += rv.value;
    } else if (worse(rv.value, same_gpu->value)) {
      *same_gpu = rv;
    }
  }
  if (out.empty()) {  // a pass, or a sum over the bound that no row exceeds alone: the worst row
    const auto worst =
        std::min_element(m.values.begin(), m.values.end(), [&](const RowValue& a, const RowValue& b) {
          return worse(a.value, b.value) || (m.is_sum && a.value > b.value);
        });
    out.push_back(*worst);
  }
  return out;
}

}  // namespace

Profile parse_profile(const std::string& yaml, const std::string& name) {
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
                        in_turn(r, what)});
    }
    for (std::size_t i = 0; i < root["checks"].size(); ++i) {
      const YAML::Node c = root["checks"][i];
      const std::string what = fmt::format("{}: checks[{}]", name, i);
      check_keys(c, {"name", "workload", "where", "metric", "golden", "factor", "min", "max", "min_ranks"},
                 what);
      AcceptCheck check;
      check.name = required(c, "name", what);
      check.workload = required(c, "workload", what);
      check.metric = required(c, "metric", what);
      check.where = string_map(c, "where", what);
      check.golden = number(c, "golden", what);
      check.factor = number(c, "factor", what).value_or(0.75);
      check.min = number(c, "min", what);
      check.max = number(c, "max", what);
      check.min_ranks = min_ranks(c, what);
      if (!(check.factor > 0 && check.factor <= 1)) {
        throw InputError(fmt::format("{} ({}): factor must be in (0, 1]", what, check.name));
      }
      // A golden value of 0 (or below) passes everything higher-is-better and nothing lower-is-better.
      if (check.golden && !(*check.golden > 0)) {
        throw InputError(fmt::format("{} ({}): golden must be a number above 0, not {}{} (train it: --train)",
                                     what, check.name, *check.golden, line_of(c["golden"])));
      }
      if (!check.golden && !check.min && !check.max && !(c["golden"] && c["golden"].IsNull())) {
        throw InputError(fmt::format("{} ({}): needs golden (with factor), min or max", what, check.name));
      }
      p.checks.push_back(std::move(check));
    }
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: {}", name, e.what()));
  }
  return p;
}

Profile load_profile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) {
    throw InputError(fmt::format("--profile {}: cannot be read", path.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_profile(text.str(), path.string());
}

CheckOutcome evaluate(const AcceptCheck& check, const AcceptRows& rows, int ranks) {
  CheckOutcome out;
  if (check.min_ranks > ranks) {
    out.skipped = true;
    out.detail = fmt::format("needs {} ranks (the run had {}): run it under mpirun -np {}", check.min_ranks,
                             ranks, check.min_ranks);
    return out;
  }
  // Rows it matched, all skipped by the harness: nothing to judge (not a pass, and not the GPU's fault).
  std::size_t matched = 0;
  const ResultRow* skipped_row = nullptr;
  std::size_t skipped_rows = 0;
  for (const ResultRow& row : rows) {
    if (matches(row, check)) {
      ++matched;
      if (row.verdict == Verdict::skip) {
        skipped_rows += 1;
        skipped_row = skipped_row != nullptr ? skipped_row : &row;
      }
    }
  }
  if (matched > 0 && skipped_rows == matched) {
    out.skipped = true;
    out.not_run = true;
    out.detail = fmt::format("not judged: its {} row(s) were skipped ({})", matched,
                             skipped_row->reason.substr(0, skipped_row->reason.find('\n')));
    return out;
  }
  const std::optional<Measured> m = measure(check, rows);
  if (!m) {
    if (const std::optional<std::string> why = not_measured(check, rows)) {
      out.skipped = true;  // this GPU does not give the figure (no NVLink, a query NVML lacks): not its fault
      out.detail = fmt::format("not measured on this GPU: {}", *why);
      return out;
    }
    const bool workload_ran = std::any_of(
        rows.begin(), rows.end(), [&](const ResultRow& row) { return row.workload == check.workload; });
    out.detail = workload_ran ? fmt::format("no {} row with metric {} matched", check.workload, check.metric)
                              : fmt::format(
                                    "these results have no {} row at all (made by a run without that "
                                    "workload, or before it existed): accept on the GPU to judge it",
                                    check.workload);
    return out;
  }
  out.measured = m->value;
  out.unit = m->unit;
  const std::vector<Bound> bounds = bounds_of(check, *m);
  std::vector<std::string> parts;
  for (const Bound& b : bounds) {
    parts.push_back(fmt::format("{} {}{}", b.at_least ? ">=" : "<=", with_unit(b.value, m->unit),
                                b.from.empty() ? std::string() : fmt::format(" ({})", b.from)));
  }
  out.pass = !bounds.empty() && meets(m->value, bounds);
  out.bound =
      bounds.empty() ? "none (train the profile: --train)" : fmt::format("{}", fmt::join(parts, " and "));
  const std::vector<RowValue> named = named_rows(*m, bounds, out.pass);
  // One GPU gave every row (a one-GPU run): it is named once, without a value of its own.
  const bool one_row = std::all_of(m->values.begin(), m->values.end(), [&](const RowValue& rv) {
    return on_one_gpu(*rv.row, *named.front().row);
  });
  std::vector<std::string> gpus;
  for (const RowValue& rv : named) {
    const std::string gpu = describe(rv.row->gpu, rv.row->rank);
    gpus.push_back(one_row ? gpu : fmt::format("{} on {}", with_unit(rv.value, m->unit), gpu));
  }
  out.where = fmt::format("{}", fmt::join(gpus, "; "));
  const std::string rows_text = fmt::format("{} row{}", m->rows, m->rows == 1 ? "" : "s");
  const std::string which = m->is_sum ? fmt::format("total of {}", rows_text)
                            : m->values.size() == 1
                                ? rows_text
                                : fmt::format("{} of {}", m->higher_better ? "lowest" : "highest", rows_text);
  const std::string on = one_row ? "on" : out.pass ? "worst:" : "failing:";
  // A fail whose value prints as its bound ("measured 0.999, needs >= 0.999") shows more digits.
  const bool ties = !out.pass && std::any_of(bounds.begin(), bounds.end(), [&](const Bound& b) {
    return with_unit(b.value, m->unit) == with_unit(m->value, m->unit);
  });
  const std::string measured = with_unit(m->value, m->unit, ties ? 10 : 4);
  out.detail = fmt::format("measured {} ({}), needs {}; {} {}", measured, which, out.bound, on, out.where);
  if (!out.pass) {
    // What the failing rows say of this figure ("xid.events: XID 79 during the run (...)"): the why.
    std::vector<std::string> about;
    const std::string prefix = check.metric + ": ";
    for (const RowValue& rv : named) {
      for (const std::string& note : rv.row->notes) {
        if (note.starts_with(prefix) &&
            std::find(about.begin(), about.end(), note.substr(prefix.size())) == about.end()) {
          about.push_back(note.substr(prefix.size()));
        }
      }
    }
    if (!about.empty()) {
      out.detail += fmt::format("; {}", fmt::join(about, "; "));
    }
  }
  // Some of its rows were skipped (one GPU's case could not run): a pass of the others does not judge every
  // GPU.
  if (out.pass && skipped_rows > 0) {
    out.pass = false;
    out.skipped = true;
    out.not_run = true;
    out.detail = fmt::format("not judged on every GPU: {} of its {} rows were skipped ({}); the others: {}",
                             skipped_rows, matched,
                             skipped_row->reason.substr(0, skipped_row->reason.find('\n')), out.detail);
  }
  return out;
}

std::vector<Untrained> train(Profile& profile, const AcceptRows& rows) {
  std::vector<Untrained> untrained;
  for (AcceptCheck& check : profile.checks) {
    if (!check.golden && (check.min || check.max)) {
      continue;
    }
    const std::optional<Measured> m = measure(check, rows);
    if (!m) {
      untrained.push_back({check.name, "no matching row in these results"});
    } else if (!(m->value > 0) || !std::isfinite(m->value)) {
      untrained.push_back({check.name, fmt::format("measured {}: a golden value must be above 0 (give the "
                                                   "check a min or max instead)",
                                                   m->value)});
    } else {
      check.golden = m->value;
    }
  }
  return untrained;
}

std::string to_yaml(const Profile& p) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << p.name << YAML::Key << "gpu" << YAML::Value
      << p.gpu;
  if (!p.description.empty()) {
    out << YAML::Key << "description" << YAML::Value << YAML::Literal << p.description;
  }
  out << YAML::Key << "runs" << YAML::Value << YAML::BeginSeq;
  for (const ProfileRun& r : p.runs) {
    out << YAML::BeginMap << YAML::Key << "workload" << YAML::Value << r.workload;
    if (!r.params.empty()) {
      out << YAML::Key << "params" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : r.params) {
        out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
      }
      out << YAML::EndMap;
    }
    if (r.min_ranks != 1) {
      out << YAML::Key << "min_ranks" << YAML::Value << r.min_ranks;
    }
    if (r.in_turn) {
      out << YAML::Key << "in_turn" << YAML::Value << true;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::Key << "checks" << YAML::Value << YAML::BeginSeq;
  for (const AcceptCheck& c : p.checks) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << c.name << YAML::Key << "workload"
        << YAML::Value << c.workload;
    if (!c.where.empty()) {
      out << YAML::Key << "where" << YAML::Value << YAML::Flow << YAML::BeginMap;
      for (const auto& [k, v] : c.where) {
        out << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
      }
      out << YAML::EndMap;
    }
    out << YAML::Key << "metric" << YAML::Value << c.metric;
    if (c.golden) {
      out << YAML::Key << "golden" << YAML::Value << fmt::format("{:.6g}", *c.golden) << YAML::Key << "factor"
          << YAML::Value << c.factor;
    } else if (!c.min && !c.max) {
      out << YAML::Key << "golden" << YAML::Value << YAML::Null;  // to be trained
    }
    if (c.min) {
      out << YAML::Key << "min" << YAML::Value << fmt::format("{:.6g}", *c.min);
    }
    if (c.max) {
      out << YAML::Key << "max" << YAML::Value << fmt::format("{:.6g}", *c.max);
    }
    if (c.min_ranks != 1) {
      out << YAML::Key << "min_ranks" << YAML::Value << c.min_ranks;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace memstress
