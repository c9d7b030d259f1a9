#pragma once

// `memstress db history` and `memstress db compare`: one GPU's (or node's) metrics over time, and two
// drivers side by side over the GPUs that ran under both.
//
// Note [Two drivers across a fleet]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// `db compare --driver A --driver B` judges each measurement (a group of Note [Fleet outliers: median and
// MAD]: workload, case, allocator, metric, ranks at once, GPU model) the way `memstress compare` judges a
// metric (Note [Judging a metric]: the change of the median beyond a threshold, and a two-sided
// Mann-Whitney U test at alpha 0.01), with one difference: a sample is a GPU, not a repetition. Each GPU that
// ran the measurement under both drivers gives one value under A and one under B (the median of its rows'
// medians under that driver); GPUs seen under one driver only are left out, so a driver upgrade that also
// swapped half the nodes compares like with like. With 5 or more such GPUs a side the test can call a change
// (fewer: UNSURE, as with 4 repetitions in `compare`); repetitions within a run are already folded into the
// row's median. The test is unpaired; beside it the table gives the paired view, the median over the GPUs
// of each GPU's own change (B / A - 1), which a reader can hold against the unpaired one: where they
// disagree, a few GPUs moved a lot.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/compare/compare.hpp"
#include "harness/db/store.hpp"

namespace memstress::db {

struct HistoryPoint {
  std::string started_at;
  std::string driver;
  std::string previous_driver;  // set where the driver differs from the point before: a driver change
  double median = 0;
};

// One measurement on one GPU over time (oldest first).
struct HistorySeries : MeasurementKey {
  std::string gpu_uuid, host, pci_bus_id, model;
  int concurrent_ranks = 1;
  std::vector<HistoryPoint> points;
};

// Groups the observations (of one GPU or host) into series, each in time order; series ordered by GPU,
// workload, case, allocator and metric.
std::vector<HistorySeries> history(const std::vector<MetricObservation>& observations);
std::string format_history_table(const std::vector<HistorySeries>& series);
nlohmann::json history_json(const std::vector<HistorySeries>& series);

struct DriverGroup : MeasurementKey {
  std::string model;
  int concurrent_ranks = 1;
  std::size_t gpus = 0;              // that ran it under both drivers
  double paired_change_pct = 0;      // the median over those GPUs of (B / A - 1) * 100
  compare::MetricComparison judged;  // samples: one value per GPU and driver
};

struct DriverComparison {
  std::string base_driver, new_driver;
  compare::CompareOptions options;
  std::vector<DriverGroup> groups;    // judged: at least one GPU under both drivers
  std::size_t gpus_both = 0;          // distinct GPUs seen under both drivers
  std::size_t groups_one_driver = 0;  // measurements no GPU ran under both
  compare::OutcomeCounts counts;
  [[nodiscard]] bool regressed() const noexcept { return counts.worse > 0; }
};

DriverComparison compare_drivers(const std::vector<MetricObservation>& observations, const std::string& base,
                                 const std::string& next, const compare::CompareOptions& options);

// The same, fed one observation at a time, or one GPU's summary at a time (Store::for_each_series), holding
// per measurement and GPU only its medians under each driver.
class DriverAccumulator {
 public:
  DriverAccumulator(std::string base, std::string next);
  // A run's median: a GPU's value under a driver is the median of those it is given.
  void add(const MetricObservation& observation);
  // A GPU's runs under the measurement's driver, summarised: its value there is the summary's median.
  void add(const Measurement& measurement, const Device& gpu, const GpuSummary& summary);
  [[nodiscard]] DriverComparison report(const compare::CompareOptions& options) const;
  // Every driver the observations named, in order (for a message when a --driver matched none).
  [[nodiscard]] const std::set<std::string>& drivers_seen() const noexcept { return drivers_seen_; }

 private:
  struct Value {
    std::uint32_t gpu = 0;  // into uuids_
    bool next = false;      // under the new driver, else under the base
    double value = 0;
  };
  struct Group {
    MeasurementKey what;  // what the measurement is
    std::string model;
    int concurrent_ranks = 1;
    std::vector<Value> values;  // each GPU's, as they came
  };
  Group& group(const MeasurementKey& what, const std::string& model, int concurrent_ranks);
  void add_value(Group& group, std::uint32_t gpu, const std::string& driver, double value);

  std::string base_, next_;
  std::unordered_map<std::string, Group> groups_;  // by measurement key
  std::unordered_map<std::int64_t, Group*>
      by_measurement_;  // Measurement::id -> (nodes: pointers stay valid)
  std::unordered_map<std::string, std::uint32_t> gpu_index_;   // GPU UUID -> position in uuids_
  std::unordered_map<std::int64_t, std::uint32_t> by_device_;  // Device::id -> position in uuids_
  std::vector<std::string> uuids_;
  std::string key_;  // reused
  std::set<std::string> drivers_seen_;
  std::string last_driver_;
};
std::string format_driver_table(const DriverComparison& comparison);
nlohmann::json driver_json(const DriverComparison& comparison);

}  // namespace memstress::db
