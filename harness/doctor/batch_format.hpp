#pragma once

// What `memstress predict-batch` prints and writes: the match, the model, every batch tried, the largest
// that fits and where the next runs out, for people; the memstress.predict-batch/1 JSON document. Counts
// are given in the order the user named the snapshots, whichever run was the model's template.

#include <nlohmann/json.hpp>
#include <string>

#include "harness/doctor/batch_model.hpp"
#include "harness/doctor/flags.hpp"

namespace memstress::doctor {

struct BatchReport {
  std::string path_first;  // as the user gave them
  std::string path_second;
  std::uint64_t batch_first = 0;
  std::uint64_t batch_second = 0;
  const DoctorInput* first = nullptr;
  const DoctorInput* second = nullptr;
  const BatchModel* model = nullptr;
  const BatchAnswer* answer = nullptr;
  std::string setting_origin;
  std::uint64_t max_batch = 0;
  DoctorFlags flags{};  // the command's, named in the advice
};

// Beyond this many times the larger recorded batch, the answer comes with advice: record again at about a
// quarter and a half of it. A request that grew with the batch in both runs but stops growing between the
// larger run and the answer (a library workspace with a cap) is extrapolated as if it never stopped: a
// transformer predicted 96 from 12 and 24 where PyTorch fit 104, and 102 from 24 and 48
// (results/h100/doctor-batch-580.159.04/). At twice the larger batch, the quarter-and-half runs themselves.
inline constexpr double kFarBeyond = 2.5;

// The advice, or "" when the answer lies within kFarBeyond of the larger batch recorded or no batch was
// found to fail (it fits up to the command's most, max_batch).
[[nodiscard]] std::string far_beyond_advice(const BatchReport& report);

// The safe end of the range below this share of the estimate: not sure, record again.
inline constexpr double kNarrow = 0.9;

// Sure: an answer found within kFarBeyond of the larger batch recorded, the runs well matched and the range
// narrow. When not, record_at names two batches to record (a quarter and a half of the safe answer); null
// when sure.
[[nodiscard]] bool sure(const BatchReport& report);
[[nodiscard]] nlohmann::json record_at(const BatchReport& report);

[[nodiscard]] nlohmann::json batch_document(const BatchReport& report);
[[nodiscard]] std::string format_batch(const BatchReport& report);

}  // namespace memstress::doctor
