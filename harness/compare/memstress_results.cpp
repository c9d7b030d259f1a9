// memstress results (memstress.run/1) as one side of a comparison: the rows as they are, the
// environment of every rank flattened to the facts a driver comparison cares about.

#include <fmt/format.h>

#include <array>

#include "harness/compare/results.hpp"
#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

namespace memstress::compare {
namespace {

// A JSON value as text for people: strings as they are, booleans on/off.
std::string text(const nlohmann::json& v) {
  if (v.is_string()) {
    return v.get<std::string>();
  }
  if (v.is_boolean()) {
    return v.get<bool>() ? "on" : "off";
  }
  return v.dump();
}

enum class Shown { plain, bytes, mhz, watts };

struct FactSpec {
  const char* label;
  const char* pointer;  // JSON pointer into the rank's (or a GPU's) object
  Shown shown = Shown::plain;
};

// What is compared, and nothing that merely identifies a machine (host name, UUIDs, serials, bus ids)
// or moves by itself (temperature).
constexpr std::array kRankFacts{
    FactSpec{"driver", "/driver/version"},
    FactSpec{"CUDA driver", "/driver/cuda_driver_version"},
    FactSpec{"CUDA runtime", "/cuda_runtime/version"},
    FactSpec{"NCCL", "/nccl/version"},
    FactSpec{"MPI", "/mpi/library"},
    FactSpec{"OS", "/host/os"},
    FactSpec{"kernel", "/host/kernel"},
    FactSpec{"CPU", "/host/cpu_model"},
};
constexpr std::array kGpuFacts{
    FactSpec{"name", "/name"},
    FactSpec{"memory", "/memory_bytes", Shown::bytes},
    FactSpec{"compute capability", "/compute_capability"},
    FactSpec{"SMs", "/sm_count"},
    FactSpec{"ECC", "/ecc_enabled"},
    FactSpec{"SM clock max", "/sm_clock_max_mhz", Shown::mhz},
    FactSpec{"SM clock", "/sm_clock_mhz", Shown::mhz},
    FactSpec{"memory clock max", "/memory_clock_max_mhz", Shown::mhz},
    FactSpec{"memory clock", "/memory_clock_mhz", Shown::mhz},
    FactSpec{"power limit", "/power_limit_w", Shown::watts},
    FactSpec{"PCIe gen", "/pcie_link_gen"},
    FactSpec{"PCIe width", "/pcie_link_width"},
    FactSpec{"MIG", "/mig_enabled"},
    FactSpec{"persistence mode", "/persistence_mode"},
    FactSpec{"VBIOS", "/vbios_version"},
};

void add_facts(std::vector<Fact>& out, const nlohmann::json& object, const std::string& prefix,
               std::span<const FactSpec> specs) {
  for (const FactSpec& spec : specs) {
    const nlohmann::json::json_pointer pointer(spec.pointer);
    if (!object.contains(pointer) || object.at(pointer).is_null()) {
      continue;
    }
    const nlohmann::json& v = object.at(pointer);
    std::string shown = text(v);
    if (spec.shown == Shown::bytes && v.is_number_unsigned()) {
      shown = human_bytes(v.get<std::uint64_t>());
    } else if (spec.shown == Shown::mhz) {
      shown += " MHz";
    } else if (spec.shown == Shown::watts) {
      shown += " W";
    }
    out.emplace_back(prefix + spec.label, std::move(shown));
  }
}

ResultRow read_row(const nlohmann::json& j) {
  ResultRow row;
  row.workload = j.at("workload").get<std::string>();
  row.case_label = j.at("case").get<std::string>();
  for (const auto& [key, value] : j.at("params").items()) {
    row.params[key] = value.get<std::string>();
  }
  row.allocator = j.at("allocator").get<std::string>();
  row.rank = j.at("rank").get<int>();
  row.device = j.at("device").at("name").get<std::string>();
  const std::string verdict = j.at("verdict").get<std::string>();
  const std::optional<Verdict> v = verdict_from_string(verdict);
  if (!v) {
    throw InputError(fmt::format("verdict '{}': expected pass, fail, skip or error", verdict));
  }
  row.verdict = *v;
  row.reason = j.at("reason").get<std::string>();
  for (const auto& [name, metric] : j.at("metrics").items()) {
    MetricResult m = metric.get<MetricResult>();
    m.name = name;
    row.metrics.push_back(std::move(m));
  }
  return row;
}

}  // namespace

std::vector<Fact> rank_facts(const nlohmann::json& rank, const std::string& prefix) {
  std::vector<Fact> facts;
  add_facts(facts, rank, prefix, kRankFacts);
  if (rank.contains("gpus") && rank.at("gpus").is_array()) {
    const nlohmann::json& gpus = rank.at("gpus");
    facts.emplace_back(prefix + "GPUs", std::to_string(gpus.size()));
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      add_facts(facts, gpus[i], fmt::format("{}GPU {} ", prefix, i), kGpuFacts);
    }
  }
  if (rank.contains("variables") && rank.at("variables").is_object()) {
    for (const auto& [name, value] : rank.at("variables").items()) {
      facts.emplace_back(fmt::format("{}${}", prefix, name), text(value));
    }
  }
  return facts;
}

Results memstress_results(const nlohmann::json& header, const std::vector<nlohmann::json>& rows) {
  Results r;
  r.kind = ResultsKind::memstress;
  const nlohmann::json& tool = header.at("memstress");
  r.environment.emplace_back("memstress version", tool.at("version").get<std::string>());
  r.environment.emplace_back("memstress git sha", tool.at("git_sha").get<std::string>());
  const nlohmann::json& ranks = header.at("environment").at("ranks");
  r.environment.emplace_back("ranks", std::to_string(ranks.size()));
  for (const nlohmann::json& rank : ranks) {
    // Rank 0 unprefixed, so that a run on one rank and a run on several compare rank 0 with rank 0.
    const int number = rank.at("rank").get<int>();
    const std::string prefix = number == 0 ? std::string() : fmt::format("rank {} ", number);
    for (Fact& f : rank_facts(rank, prefix)) {
      r.environment.push_back(std::move(f));
    }
  }
  const std::string status = header.at("status").get<std::string>();
  if (status == "aborted") {
    r.notes.push_back(fmt::format("the run was aborted: {}", header.value("abort_reason", std::string())));
  } else if (status == "running") {
    r.notes.emplace_back("the run did not finish (status running): comparing the rows it has");
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    try {
      r.rows.push_back(read_row(rows[i]));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("row {}: {}", i + 1, e.what()));
    } catch (const InputError& e) {
      throw InputError(fmt::format("row {}: {}", i + 1, e.what()));
    }
  }
  return r;
}

}  // namespace memstress::compare
