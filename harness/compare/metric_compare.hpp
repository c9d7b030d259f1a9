#pragma once

// Note [Judging a metric]
// ~~~~~~~~~~~~~~~~~~~~~~~
// `memstress compare` says of every metric whether NEW is the SAME as BASE, BETTER, WORSE, or that it
// cannot tell (UNSURE). Two questions, both must be answered yes before a change is called:
//
// 1. Is the change large enough to matter? The effect is the change of the median, (new - base) / |base|
//    in percent. Within the threshold (5% unless --threshold says otherwise) it is SAME, significant or
//    not: a real 1% shift in a GPU timing is not worth a failed job.
// 2. Is it more than noise? The repetitions of the two runs (each metric's `samples`) go through a
//    two-sided Mann-Whitney U test (Note [Mann-Whitney U], harness/stats/mann_whitney.hpp), at
//    alpha = 0.01. We chose it over a bootstrap of the median ratio because it is exact and needs no
//    random numbers at the sample counts we have (5 repetitions by default; a bootstrap over 5 values
//    has only a handful of distinct medians to draw from), and it uses ranks only, so a single slow
//    first repetition does not decide the outcome.
//
// Hence: |change| <= threshold -> SAME; beyond it, with at least 3 samples a side and p < alpha ->
// BETTER or WORSE by the metric's `better` (higher/lower); beyond it but too few samples, or not
// significant -> UNSURE. A metric whose `better` is none is reported with its change and not judged
// ("-"). A change exactly at the threshold is not beyond it.
//
// Why alpha = 0.01 and not the usual 0.05: the default job reports about 120 metrics, so at 0.05 two
// runs of the same build would differ "significantly" in several of them by chance (with 5 against 5,
// 8 of the 252 equally likely orderings reach p < 0.05), and the noisy ones (sub-microsecond latencies)
// also move their medians by more than 5%: identical builds would come out WORSE. At 0.01 only the 2
// orderings that keep the runs wholly apart qualify, one of them in the bad direction (1 in 252 per
// metric), and since both questions must say yes, fewer still; tests/unit/test_compare.cpp draws 2000
// pairs of identical-build runs at several noise levels and holds WORSE under 1%. The price: with 5
// repetitions a side only complete separation is significant (p = 2/252 = 0.0079), and with 4 or fewer
// nothing is (the smallest p is 2/70 = 0.029), so changes show as UNSURE until there are 5 or more
// repetitions. The test sees the spread within each run, not the drift between runs (clocks, the
// process's memory layout): the threshold is the guard against that, and a noisy metric wants a higher
// one.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/results/row.hpp"

namespace memstress::compare {

enum class Outcome { same, better, worse, unsure, not_judged };
std::string_view to_string(Outcome outcome) noexcept;  // "SAME", "BETTER", "WORSE", "UNSURE", "-"

struct CompareOptions {
  double threshold_pct = 5.0;   // smallest change (of the median, percent) that counts
  double alpha = 0.01;          // significance level of the two-sided test
  std::size_t min_samples = 3;  // per side, for a verdict beyond the threshold
  bool match_any_gpu = false;   // rows match whatever their GPU model (--match-any-gpu)
  // The command's flag that sets match_any_gpu, named where it would have matched rows, or did.
  std::string match_any_gpu_flag{};
  // The options of the command that made the results (`memstress run`) that say where its results went,
  // not how it measured: left out of the options two runs are compared by (option_differences). Each takes a
  // value (`--out FILE`, or `--out=FILE`), but those of `output_switches`.
  std::vector<std::string> output_options{};
  std::vector<std::string> output_switches{};
};

// "5", "2.5", "5%": a positive, finite percentage; anything else throws InputError naming `what`.
double parse_threshold(std::string_view text, std::string_view what);

struct MetricComparison {
  std::string name;
  std::string unit;  // BASE's; NEW's values are converted to it where the units differ (ns vs us)
  Better better = Better::none;
  std::size_t base_n = 0;  // finite samples
  std::size_t new_n = 0;
  double base_median = 0;  // NaN where there is none
  double new_median = 0;
  std::optional<double> change_pct;  // absent where it has no value (no median, or 0 -> non-zero)
  std::optional<double> p_value;     // absent with fewer than min_samples a side
  Outcome outcome = Outcome::not_judged;
  std::string note;  // why UNSURE or not judged
};

MetricComparison compare_metric(const MetricResult& base, const MetricResult& next,
                                const CompareOptions& options);

// The factor that takes a time in `from` to `to` (ns, us, ms, s); absent for other units.
std::optional<double> time_unit_factor(std::string_view from, std::string_view to);

}  // namespace memstress::compare
