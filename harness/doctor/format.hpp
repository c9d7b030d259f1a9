#pragma once

// What `memstress doctor` prints and writes: sections for people (each a few numbers and one plain
// sentence: "->") and the memstress.doctor/1 JSON document (results/README.md), which the HTML form
// (python/memstress/report) draws.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/doctor/doctor.hpp"

namespace memstress::doctor {

[[nodiscard]] std::string format_doctor(const DoctorReport& report);
[[nodiscard]] nlohmann::json doctor_document(const DoctorReport& report);

// The doctor's recommendation, decided once for the text, the JSON document and the HTML page: the setting it
// names (none when it names none) and the sentence that says so and why (format_text.cpp).
struct Recommendation {
  std::optional<replay::SweepSetting> setting;
  std::string sentence;
};
[[nodiscard]] Recommendation recommendation(const DoctorReport& report);

// The "->" sentences of format_doctor's text, each with the section it is in ("The OOM"), for the JSON
// document and so for the HTML page: the same words in every form.
struct Advice {
  std::string section;
  std::string text;
};
[[nodiscard]] std::vector<Advice> advice_of(const std::string& text);

}  // namespace memstress::doctor
