#pragma once

#include <string>
#include <string_view>

#include "harness/results/row.hpp"
#include "harness/run/table.hpp"

namespace memstress {

enum class OutputFormat { table, json, csv, openmetrics };

// Throws InputError naming `what` (e.g. "--format") for anything but table, json, csv or openmetrics.
OutputFormat parse_output_format(std::string_view text, std::string_view what);

// What `run` prints on stdout: the table (harness/run/table.hpp, shaped by `table`), the JSON document or
// CSV (raw numbers, the recorded metric names), or OpenMetrics (harness/run/openmetrics.hpp).
std::string format_run(const RunRecord& run, OutputFormat format, const TableOptions& table = {});

std::string format_csv(const RunRecord& run);

// A number for people: no exponent below 1e5, four significant digits (2950.1 -> "2950", 0.01234 ->
// "0.01234"). For `compare`'s table; the run table prints metrics in their units (harness/run/quantity.hpp).
std::string format_value(double value);

}  // namespace memstress
