#pragma once

// What `memstress doctor` prints and writes: sections for people (each a few numbers and one plain
// sentence: "->") and the memstress.doctor/1 JSON document (results/README.md), which the HTML form
// (python/memstress/report) draws.

#include <nlohmann/json.hpp>
#include <string>

#include "harness/doctor/doctor.hpp"

namespace memstress::doctor {

[[nodiscard]] std::string format_doctor(const DoctorReport& report);
[[nodiscard]] nlohmann::json doctor_document(const DoctorReport& report);

}  // namespace memstress::doctor
