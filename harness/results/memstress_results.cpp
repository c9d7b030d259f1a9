// memstress results (memstress.run/1) as one side of a comparison: the rows as they are, the
// environment of every rank flattened to the facts a driver comparison cares about.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "harness/core/error.hpp"
#include "harness/core/json_field.hpp"
#include "harness/core/json_text.hpp"
#include "harness/core/units.hpp"
#include "harness/results/former_names.hpp"
#include "harness/results/read.hpp"

namespace memstress {
namespace {

// A JSON value as text for people: strings as they are, booleans on/off.
std::string text(const nlohmann::json& v) {
  if (v.is_string()) {
    return v.get<std::string>();
  }
  if (v.is_boolean()) {
    return v.get<bool>() ? "on" : "off";
  }
  return json_text(v);
}

enum class Shown { plain, bytes, mhz, watts };

struct FactSpec {
  const char* label = nullptr;
  const char* pointer = nullptr;  // JSON pointer into the rank's (or a GPU's) object
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

// A string at `pointer` in `object`, "" where it is absent or not a string: identities are read leniently,
// as the facts are (an old file without a bus id is still a results file).
std::string string_at(const nlohmann::json& object, const char* pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return object.contains(p) && object.at(p).is_string() ? object.at(p).get<std::string>() : std::string();
}

RankIdentity rank_identity(const JsonField& rank) {
  const nlohmann::json& j = rank.json();
  RankIdentity id;
  id.rank = static_cast<int>(rank["rank"].integer(0, kMaxRank));
  id.host = string_at(j, "/host/name");
  id.driver = string_at(j, "/driver/version");
  id.cuda_driver = string_at(j, "/driver/cuda_driver_version");
  id.cuda_runtime = string_at(j, "/cuda_runtime/version");
  id.nccl = string_at(j, "/nccl/version");
  id.device_uuid = string_at(j, "/device/uuid");
  id.device_label = string_at(j, "/device/label");
  id.device_pci_bus_id = string_at(j, "/device/pci_bus_id");
  if (j.contains("gpus") && j.at("gpus").is_array()) {
    for (const nlohmann::json& gpu : j.at("gpus")) {
      id.gpus.push_back({string_at(gpu, "/uuid"), string_at(gpu, "/name"), string_at(gpu, "/pci_bus_id"),
                         string_at(gpu, "/serial")});
    }
  }
  return id;
}

// config.ranks where it is a whole number of ranks (read leniently, as the config is descriptive: a header
// without it still says its ranks by its environment); 1 otherwise.
int job_ranks(const nlohmann::json& header) {
  const nlohmann::json::json_pointer at("/config/ranks");
  if (!header.contains(at) || !header.at(at).is_number_integer()) {
    return 1;
  }
  const auto n = header.at(at).get<std::int64_t>();
  return n >= 1 && n <= kMaxRank + 1 ? static_cast<int>(n) : 1;
}

ResultRow read_row(const JsonField& j) {
  ResultRow row;
  row.workload = j["workload"].string();
  row.case_label = j["case"].string();
  for (const auto& [key, value] : j["params"].members()) {
    row.params[key] = value.string();
  }
  row.allocator = j["allocator"].string();
  row.rank = static_cast<int>(j["rank"].integer(0, kMaxRank));
  const JsonField device = j["device"];
  row.device = device["name"].string();
  row.gpu.label = device.string_or("label", "");
  row.gpu.uuid = device.string_or("uuid", "");
  if (const std::optional<JsonField> ordinal = device.find("ordinal")) {
    row.gpu.index = static_cast<int>(ordinal->integer(0, kMaxRank));
  }
  const JsonField verdict = j["verdict"];
  const std::optional<Verdict> v = verdict_from_string(verdict.string());
  if (!v) {
    throw InputError(
        fmt::format("field verdict: '{}': expected pass, fail, skip or error", verdict.string()));
  }
  row.verdict = *v;
  row.reason = j["reason"].string();
  const JsonField verification = j["verification"];
  row.checked = verification["checked"].count();
  row.errors = verification["errors"].count();
  for (const auto& [name, metric] : j["metrics"].members()) {
    row.metrics.push_back(read_metric(metric, name));
  }
  adopt_one_names(row.workload, row.metrics);  // Note [One name per figure]
  if (const std::optional<JsonField> notes = j.find("notes")) {
    for (const JsonField& n : notes->elements()) {
      row.notes.push_back(n.string());
    }
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

ResultRow read_memstress_row(const nlohmann::json& row, std::size_t index) {
  try {
    return read_row(JsonField(row));
  } catch (const InputError& e) {
    throw InputError(fmt::format("row {}: {}", index + 1, e.what()));
  }
}

Results memstress_results(const nlohmann::json& header, const std::vector<nlohmann::json>& rows) {
  std::vector<ResultRow> read;
  read.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    read.push_back(read_memstress_row(rows[i], i));
  }
  return memstress_results(header, std::move(read));
}

Results memstress_results(const nlohmann::json& header, std::vector<ResultRow> rows) {
  Results r;
  r.kind = ResultsKind::memstress;
  const JsonField fields(header);
  const JsonField tool = fields["memstress"];
  r.environment.emplace_back("memstress version", tool["version"].string());
  r.environment.emplace_back("memstress git sha", tool["git_sha"].string());
  const std::vector<JsonField> ranks = fields["environment"]["ranks"].elements();
  r.environment.emplace_back("ranks", std::to_string(ranks.size()));
  r.ranks = std::max(job_ranks(header), static_cast<int>(std::min<std::size_t>(ranks.size(), kMaxRank + 1)));
  for (const JsonField& rank : ranks) {
    // Rank 0 unprefixed, so that a run on one rank and a run on several compare rank 0 with rank 0.
    const std::int64_t number = rank["rank"].integer(0, kMaxRank);
    r.ranks = std::max(r.ranks, static_cast<int>(number) + 1);
    const std::string prefix = number == 0 ? std::string() : fmt::format("rank {} ", number);
    for (Fact& f : rank_facts(rank.json(), prefix)) {
      r.environment.push_back(std::move(f));
    }
    r.identities.push_back(rank_identity(rank));
  }
  r.started_at = fields.string_or("started_at", std::string());
  const nlohmann::json::json_pointer in_turn("/config/in_turn");
  if (header.contains(in_turn) && header.at(in_turn).is_array()) {
    for (const nlohmann::json& workload : header.at(in_turn)) {
      if (workload.is_string()) {
        r.in_turn.push_back(workload.get<std::string>());
      }
    }
  }
  if (header.contains("argv") && header.at("argv").is_array()) {
    for (const nlohmann::json& word : header.at("argv")) {
      r.argv.push_back(word.is_string() ? word.get<std::string>() : json_text(word));
    }
  }
  const std::string status = fields["status"].string();
  r.status = status;
  r.abort_reason = fields.string_or("abort_reason", std::string());
  if (status == "aborted") {
    r.notes.push_back(fmt::format("the run was aborted: {}", r.abort_reason));
  } else if (status == "running") {
    r.notes.emplace_back("the run did not finish (status running): comparing the rows it has");
  }
  r.rows = std::move(rows);
  if (header.contains("environment")) {
    add_gpu_identity(r.rows, header.at("environment"));
  }
  return r;
}

void add_gpu_identity(std::vector<ResultRow>& rows, const nlohmann::json& environment) {
  // Read leniently: the environment is descriptive, and a field of another type only leaves a part unknown.
  const auto text_at = [](const nlohmann::json& j, const char* pointer) {
    const nlohmann::json::json_pointer at(pointer);
    return j.is_object() && j.contains(at) && j.at(at).is_string() ? j.at(at).get<std::string>()
                                                                   : std::string();
  };
  if (!environment.is_object() || !environment.contains("ranks") || !environment.at("ranks").is_array()) {
    return;
  }
  for (const nlohmann::json& rank : environment.at("ranks")) {
    if (!rank.is_object() || !rank.contains("rank") || !rank.at("rank").is_number_integer()) {
      continue;
    }
    const int number = rank.at("rank").get<int>();
    for (ResultRow& row : rows) {
      if (row.rank.value_or(0) != number) {
        continue;
      }
      row.gpu.host = text_at(rank, "/host/name");
      const nlohmann::json& gpus = rank.contains("gpus") ? rank.at("gpus") : nlohmann::json();
      for (const nlohmann::json& gpu : gpus.is_array() ? gpus : nlohmann::json::array()) {
        if (!row.gpu.uuid.empty() && text_at(gpu, "/uuid") == row.gpu.uuid) {
          row.gpu.pci_bus_id = text_at(gpu, "/pci_bus_id");
        }
      }
      if (row.gpu.pci_bus_id.empty() && !row.gpu.uuid.empty() &&
          text_at(rank, "/device/uuid") == row.gpu.uuid) {
        row.gpu.pci_bus_id = text_at(rank, "/device/pci_bus_id");
      }
    }
  }
}

std::string describe(const GpuIdentity& gpu, std::optional<int> rank) {
  std::vector<std::string> parts;
  if (!gpu.host.empty()) {
    parts.push_back("host " + gpu.host);
  }
  if (rank) {
    parts.push_back(fmt::format("rank {}", *rank));
  }
  std::vector<std::string> ids;
  if (!gpu.uuid.empty()) {
    ids.push_back(gpu.uuid);
  }
  if (!gpu.pci_bus_id.empty()) {
    ids.push_back("PCI " + gpu.pci_bus_id);
  }
  // The CUDA device as the rank saw it (cuda:N, an ordinal among its visible devices: not nvidia-smi's
  // index); the UUID and PCI bus id name the GPU itself.
  std::string which = !gpu.label.empty() ? gpu.label
                      : gpu.index >= 0   ? fmt::format("cuda:{}", gpu.index)
                                         : std::string("GPU ?");
  if (!ids.empty()) {
    which += fmt::format(" ({})", fmt::join(ids, ", "));
  }
  parts.push_back(std::move(which));
  return fmt::format("{}", fmt::join(parts, ", "));
}

ResultRow result_row(const Row& row) {
  ResultRow r;
  r.workload = row.workload;
  r.case_label = row.case_label();
  r.params.insert(row.params.begin(), row.params.end());
  r.allocator = row.allocator;
  r.device = row.device.name;
  r.rank = row.rank;
  r.gpu.label = row.device.label;
  r.gpu.index = row.device.ordinal;
  r.gpu.uuid = row.device.uuid;
  r.verdict = row.verdict;
  r.reason = row.reason;
  r.checked = row.checked;
  r.errors = row.errors;
  r.metrics = row.metrics;
  r.notes = row.notes;
  return r;
}

}  // namespace memstress
