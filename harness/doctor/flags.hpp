#pragma once

#include <string>

namespace memstress::doctor {

// The flags of `memstress doctor` and `memstress predict-batch` as the commands spell them (a library names
// no flag of its own): the outputs say where a capacity or a setting came from by them, and the advice names
// them. Doctor's advice names predict-batch's --batch and --capacity, which the two commands spell alike.
struct DoctorFlags {
  std::string capacity{};         // --capacity
  std::string alloc_conf{};       // --alloc-conf
  std::string trace_device{};     // --trace-device
  std::string batch{};            // --batch
  std::string batch_runs{};       // doctor's --batch-runs
  std::string allocator{};        // doctor's --allocator
  std::string max_batch{};        // predict-batch's --max-batch
  std::string multiprocessors{};  // predict-batch's --multiprocessors
};

}  // namespace memstress::doctor
