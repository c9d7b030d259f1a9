#include "harness/accept/judge.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "harness/accept/missing.hpp"
#include "harness/core/units.hpp"
#include "harness/stats/summary.hpp"

namespace memstress {

std::string_view to_string(Failure failure) noexcept {
  switch (failure) {
    case Failure::measured_bad:
      return "measured bad";
    case Failure::missing:
      return "missing";
    case Failure::none:
      break;
  }
  return "";
}

std::string with_unit(double v, const std::string& unit, int digits) {
  if (v == 1 && (unit == "data errors" || unit == "rows not passed")) {
    return unit == "data errors" ? "1 data error" : "1 row not passed";
  }
  if ((unit == "bytes" || unit == "bytes/epoch") && v >= 0 && v < 1.8e19) {
    return human_bytes(static_cast<std::uint64_t>(v)) + (unit == "bytes" ? "" : "/epoch");
  }
  // Beyond a million G a suffix helps nobody ("1e+299G"): the number as it is.
  const std::string number = std::abs(v) >= 1e15  ? fmt::format("{:.{}g}", v, digits)
                             : std::abs(v) >= 1e9 ? fmt::format("{:.{}g}G", v / 1e9, digits)
                             : std::abs(v) >= 1e6 ? fmt::format("{:.{}g}M", v / 1e6, digits)
                             : std::abs(v) >= 1e5 ? fmt::format("{:.{}g}k", v / 1e3, digits)
                                                  : fmt::format("{:.{}g}", v, digits);
  const bool plain = unit.empty() || unit == "ratio" || unit == "share" || unit == "count" || unit == "flag";
  return plain ? number : fmt::format("{} {}", number, unit);
}

namespace {

// The bounds a value must meet, each as [lower or upper, value, how it was set].
struct Bound {
  bool at_least = true;
  double value = 0;
  std::string from;  // "0.75 x golden 55.03 GB/s", "" for an absolute bound
};

// The median of the values the check measured, one a row.
double median_of(const std::vector<RowValue>& values) {
  std::vector<double> v;
  v.reserve(values.size());
  for (const RowValue& rv : values) {
    v.push_back(rv.value);
  }
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

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
    out.push_back({true, *check.min, check.source});
  }
  if (check.max) {
    out.push_back({false, *check.max, check.source});
  }
  if (check.spread && !m.values.empty() && !m.is_sum) {
    // AcceptCheck::spread: held to the median of the rows themselves.
    const double median = median_of(m.values);
    const double share = *check.spread / 100;
    const std::string from =
        fmt::format("{}% {} the median of {} row{}, {}", *check.spread, m.higher_better ? "below" : "above",
                    m.values.size(), m.values.size() == 1 ? "" : "s", with_unit(median, m.unit));
    out.push_back(m.higher_better ? Bound{true, median * (1 - share), from}
                                  : Bound{false, median * (1 + share), from});
  }
  return out;
}

bool meets(double v, const std::vector<Bound>& bounds) {
  return std::all_of(bounds.begin(), bounds.end(),
                     [&](const Bound& b) { return b.at_least ? v >= b.value : v <= b.value; });
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

// The rows a check matched, those of them the harness skipped, and those whose GPU does not give the figure.
struct Matched {
  std::size_t rows = 0;
  std::size_t skipped = 0;
  const ResultRow* first_skipped = nullptr;
  std::size_t not_measured = 0;
  std::string first_not_measured;  // why ("nvlink.errors (no NVLink is active on this GPU)")
};

// AcceptCheck::per_host: the rows without the skipped ones of a case that another rank of the same (named)
// host measured. A host none of whose ranks measured the case keeps its skipped rows: not judged.
AcceptRows without_measured_elsewhere(const AcceptCheck& check, const AcceptRows& rows) {
  AcceptRows kept;
  for (const ResultRow& row : rows) {
    const bool excused = row.verdict == Verdict::skip && !row.gpu.host.empty() && matches(row, check) &&
                         std::any_of(rows.begin(), rows.end(), [&](const ResultRow& other) {
                           return other.verdict != Verdict::skip && other.gpu.host == row.gpu.host &&
                                  other.case_label == row.case_label && matches(other, check);
                         });
    if (!excused) {
      kept.push_back(row);
    }
  }
  return kept;
}

// A row that passed without the figure, saying its GPU does not give it (Note [What a check expects]).
bool gpu_lacks_figure(const AcceptCheck& check, const ResultRow& row) {
  if (row.verdict != Verdict::pass || check.metric == "verdict" || check.metric == "verification.errors") {
    return false;
  }
  const MetricResult* metric = row.metric(check.metric);
  return (metric == nullptr || !std::isfinite(metric->summary.median)) && not_measured_on(row, check);
}

Matched count_matched(const AcceptCheck& check, const AcceptRows& rows) {
  Matched out;
  for (const ResultRow& row : rows) {
    if (!matches(row, check)) {
      continue;
    }
    ++out.rows;
    if (row.verdict == Verdict::skip) {
      out.skipped += 1;
      out.first_skipped = out.first_skipped != nullptr ? out.first_skipped : &row;
    } else if (gpu_lacks_figure(check, row)) {
      out.first_not_measured =
          out.not_measured == 0 ? not_measured_on(row, check).value_or("") : out.first_not_measured;
      out.not_measured += 1;
    }
  }
  return out;
}

// Why the first skipped row was skipped, its first line.
std::string skip_reason(const Matched& matched) {
  const std::string& reason = matched.first_skipped->reason;
  return reason.substr(0, reason.find('\n'));
}

CheckOutcome too_few_ranks(const AcceptCheck& check, int ranks) {
  CheckOutcome out;
  out.skipped = true;
  out.detail = fmt::format("needs {} ranks (the run had {}): run it under mpirun -np {}", check.min_ranks,
                           ranks, check.min_ranks);
  return out;
}

// Rows it matched, all skipped by the harness: nothing to judge (not a pass, and not the GPU's fault).
CheckOutcome all_skipped(const Matched& matched) {
  CheckOutcome out;
  out.skipped = true;
  out.not_run = true;
  out.detail = fmt::format("not judged: its {} row(s) were skipped ({})", matched.rows, skip_reason(matched));
  return out;
}

// No matched row gave a value: a figure this GPU does not give is skipped; anything else is missing (the
// line's "missing: " is the caller's).
CheckOutcome unmeasured(const AcceptCheck& check, const AcceptRows& rows, const Matched& matched) {
  CheckOutcome out;
  if (matched.not_measured > 0) {
    out.skipped = true;  // this GPU does not give the figure (no NVLink, a query NVML lacks): not its fault
    out.detail = fmt::format("not measured on this GPU: {}", matched.first_not_measured);
    return out;
  }
  out.failure = Failure::missing;
  const bool workload_ran = std::any_of(rows.begin(), rows.end(),
                                        [&](const ResultRow& row) { return row.workload == check.workload; });
  out.detail = workload_ran ? fmt::format("no {} row with metric {} matched", check.workload, check.metric)
                            : fmt::format(
                                  "these results have no {} row at all (made by a run without that "
                                  "workload, or before it existed): accept on the GPU to judge it",
                                  check.workload);
  return out;
}

// ">= 41.27 GB/s (0.75 x golden 55.03 GB/s) and <= 60 GB/s"
std::string bounds_text(const std::vector<Bound>& bounds, const std::string& unit) {
  std::vector<std::string> parts;
  parts.reserve(bounds.size());
  for (const Bound& b : bounds) {
    parts.push_back(fmt::format("{} {}{}", b.at_least ? ">=" : "<=", with_unit(b.value, unit),
                                b.from.empty() ? std::string() : fmt::format(" ({})", b.from)));
  }
  return fmt::format("{}", fmt::join(parts, " and "));
}

// The GPUs named: each with its value, or (`one_gpu`) the one GPU alone.
std::string where_text(const Measured& m, const std::vector<RowValue>& named, bool one_gpu) {
  std::vector<std::string> gpus;
  for (const RowValue& rv : named) {
    const std::string gpu = describe(rv.row->gpu, rv.row->rank);
    gpus.push_back(one_gpu ? gpu : fmt::format("{} on {}", with_unit(rv.value, m.unit), gpu));
  }
  return fmt::format("{}", fmt::join(gpus, "; "));
}

// Which rows the value is of: "3 rows", "total of 3 rows", "lowest of 3 rows".
std::string which_rows(const Measured& m) {
  const std::string rows_text = fmt::format("{} row{}", m.rows, m.rows == 1 ? "" : "s");
  if (m.is_sum) {
    return fmt::format("total of {}", rows_text);
  }
  return m.values.size() == 1 ? rows_text
                              : fmt::format("{} of {}", m.higher_better ? "lowest" : "highest", rows_text);
}

// The measured value; a fail whose value prints as its bound ("measured 0.999, needs >= 0.999") shows more
// digits.
std::string measured_text(const Measured& m, const std::vector<Bound>& bounds, bool pass) {
  const bool ties = !pass && std::any_of(bounds.begin(), bounds.end(), [&](const Bound& b) {
    return with_unit(b.value, m.unit) == with_unit(m.value, m.unit);
  });
  return with_unit(m.value, m.unit, ties ? 10 : 4);
}

// What the failing rows say of this figure ("xid.events: XID 79 during the run (...)"): the why, as
// "; ..." to append, or "".
std::string failing_notes(const AcceptCheck& check, const std::vector<RowValue>& named) {
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
  return about.empty() ? std::string() : fmt::format("; {}", fmt::join(about, "; "));
}

// A judged value's line: "measured V (...)" on a pass, "measured bad: V (...)" on a fail.
std::string judged_text(bool pass, const std::string& body) {
  return fmt::format("{} {}", pass ? "measured" : "measured bad:", body);
}

// The measured value held to the check's bounds; `body`: the line without its first words (judged_text).
CheckOutcome judge_one(const AcceptCheck& check, const Measured& m, std::string* body = nullptr) {
  CheckOutcome out;
  out.measured = m.value;
  out.unit = m.unit;
  const std::vector<Bound> bounds = bounds_of(check, m);
  out.pass = !bounds.empty() && meets(m.value, bounds);
  out.bound =
      bounds.empty() ? fmt::format("none (train the profile: {})", check.train) : bounds_text(bounds, m.unit);
  const std::vector<RowValue> named = named_rows(m, bounds, out.pass);
  // One GPU gave every row (a one-GPU run): it is named once, without a value of its own.
  const bool one_gpu = std::all_of(m.values.begin(), m.values.end(), [&](const RowValue& rv) {
    return on_one_gpu(*rv.row, *named.front().row);
  });
  out.where = where_text(m, named, one_gpu);
  const std::string on = one_gpu ? "on" : out.pass ? "worst:" : "failing:";
  std::string text = fmt::format("{} ({}), needs {}; {} {}", measured_text(m, bounds, out.pass),
                                 which_rows(m), out.bound, on, out.where);
  if (!out.pass) {
    text += failing_notes(check, named);
    out.failure = Failure::measured_bad;
  }
  out.detail = judged_text(out.pass, text);
  if (body != nullptr) {
    *body = std::move(text);
  }
  return out;
}

// AcceptCheck::spread in a job of several nodes: the values by node (GpuId::host), in the order the nodes
// first appear, each with its own worst value; one group where every row is of one node (or of none named).
std::vector<Measured> by_node(const Measured& m) {
  std::vector<Measured> nodes;
  for (const RowValue& rv : m.values) {
    const auto same = std::find_if(nodes.begin(), nodes.end(), [&](const Measured& n) {
      return n.values.front().row->gpu.host == rv.row->gpu.host;
    });
    Measured& node = same != nodes.end()
                         ? *same
                         : nodes.emplace_back(Measured{rv.value, m.higher_better, m.is_sum, m.unit, 0, {}});
    node.values.push_back(rv);
    node.rows += 1;
    node.value = m.higher_better ? std::min(node.value, rv.value) : std::max(node.value, rv.value);
  }
  return nodes;
}

// How far a node's worst row stands from its median, worse as it grows (0: at the median).
double lag(const Measured& node) {
  const double median = median_of(node.values);
  if (median == 0) {
    return 0;
  }
  return node.higher_better ? 1 - node.value / median : node.value / median - 1;
}

// A node as a line names it.
std::string node_name(const Measured& node) {
  const std::string& host = node.values.front().row->gpu.host;
  return host.empty() ? std::string("(no host)") : host;
}

// A node's own median means something from this many rows on; with fewer on any node (one GPU a node, a
// per_host figure) the job is held to its median as one crowd.
constexpr std::size_t kNodeRows = 3;

// AcceptCheck::spread with rows of several nodes: each node is held to its own median (a job over nodes of
// different models, or over a slow node, is not one crowd). A fail names every failing node, with the
// first one's value and bound; a pass the node whose worst row lags its median most.
CheckOutcome judge_nodes(const AcceptCheck& check, const std::vector<Measured>& nodes) {
  std::vector<CheckOutcome> each;
  std::vector<std::string> bodies(nodes.size());
  std::vector<double> lags;
  each.reserve(nodes.size());
  lags.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    each.push_back(judge_one(check, nodes[i], &bodies[i]));
    lags.push_back(lag(nodes[i]));
  }
  CheckOutcome out;
  std::vector<std::string> where;
  std::vector<std::string> detail;
  std::optional<std::size_t> shown;  // the node whose value and bound the outcome reports
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!each[i].pass) {
      shown = shown ? shown : i;
      where.push_back(each[i].where);
      detail.push_back(fmt::format("node {}: {}", node_name(nodes[i]), bodies[i]));
    }
  }
  out.pass = !shown;
  if (out.pass) {
    shown = static_cast<std::size_t>(std::max_element(lags.begin(), lags.end()) - lags.begin());
    where.push_back(each[*shown].where);
    detail.push_back(
        fmt::format("lagging its median most, node {}: {}", node_name(nodes[*shown]), each[*shown].detail));
  }
  out.measured = each[*shown].measured;
  out.unit = each[*shown].unit;
  out.bound = fmt::format("{}; each of {} nodes held to its own median", each[*shown].bound, nodes.size());
  out.where = fmt::format("{}", fmt::join(where, "; "));
  out.failure = out.pass ? Failure::none : Failure::measured_bad;
  out.detail = fmt::format("{}{} nodes, each held to its own median: {}",
                           out.pass ? "" : "measured bad: ", nodes.size(), fmt::join(detail, "; "));
  return out;
}

CheckOutcome judge(const AcceptCheck& check, const Measured& m) {
  if (check.spread && !m.is_sum) {
    const std::vector<Measured> nodes = by_node(m);
    const bool crowds =
        std::all_of(nodes.begin(), nodes.end(), [](const Measured& n) { return n.rows >= kNodeRows; });
    if (nodes.size() > 1 && crowds) {
      return judge_nodes(check, nodes);
    }
  }
  return judge_one(check, m);
}

// Some of its rows were skipped (one GPU's case could not run), or say their GPU does not give the figure:
// a pass of the others does not judge every GPU.
void not_judged_everywhere(CheckOutcome& out, const Matched& matched) {
  out.pass = false;
  out.skipped = true;
  out.not_run = true;
  const std::string what = matched.skipped > 0
                               ? fmt::format("{} of its {} rows were skipped ({})", matched.skipped,
                                             matched.rows, skip_reason(matched))
                               : fmt::format("{} of its {} rows were not measured on their GPU: {}",
                                             matched.not_measured, matched.rows, matched.first_not_measured);
  out.detail = fmt::format("not judged on every GPU: {}; the others: {}", what, out.detail);
}

// Values the check was owed and lacks: it FAILs naming each GPU, whatever the others measured (fail closed).
// A check whose judged values fail says so first.
void with_missing(CheckOutcome& out, const NamedList& missing) {
  if (missing.empty()) {
    return;
  }
  const bool measured_bad = out.failure == Failure::measured_bad;
  out.pass = false;
  out.skipped = false;
  out.not_run = false;
  if (measured_bad) {
    out.detail += fmt::format("; missing: {}", missing.text());
  } else {
    out.failure = Failure::missing;
    out.detail = fmt::format("missing: {}; the others: {}", missing.text(), out.detail);
  }
}

}  // namespace

CheckOutcome evaluate(const AcceptCheck& check, const AcceptInput& input) {
  if (check.min_ranks > input.ranks()) {
    return too_few_ranks(check, input.ranks());
  }
  const NamedList missing = missing_values(check, input);
  const AcceptRows kept = check.per_host ? without_measured_elsewhere(check, input.rows) : AcceptRows();
  const AcceptRows& judged = check.per_host ? kept : input.rows;
  const Matched matched = count_matched(check, judged);
  if (matched.rows > 0 && matched.skipped == matched.rows) {
    CheckOutcome out = all_skipped(matched);
    with_missing(out, missing);  // "the others: not judged: ..."
    return out;
  }
  const std::optional<Measured> m = measure(check, judged);
  if (!m) {
    CheckOutcome out = unmeasured(check, judged, matched);
    if (out.skipped) {
      with_missing(out, missing);  // "the others: not measured on this GPU: ..."
    } else {
      out.detail = missing.empty() ? fmt::format("missing: {}", out.detail)
                                   : fmt::format("missing: {}; {}", missing.text(), out.detail);
    }
    return out;
  }
  CheckOutcome out = judge(check, *m);
  if (out.pass && (matched.skipped > 0 || matched.not_measured > 0)) {
    not_judged_everywhere(out, matched);
  }
  with_missing(out, missing);
  return out;
}

CheckOutcome evaluate(const AcceptCheck& check, const AcceptRows& rows, int ranks) {
  return evaluate(check, complete_run(rows, ranks));
}

}  // namespace memstress
