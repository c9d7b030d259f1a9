#pragma once

// What a PyTorch snapshot says beyond its trace (python/memstress/convert.py --facts, schema
// memstress.snapshot-facts/1): each allocation's site (the user's line that asked for it), the allocator
// settings the program ran with, what each OOM saw of the device, the memstress recorder's notes and marks.
// A memstress trace or an RMM log has none of these: its facts are empty, and the doctor says so.

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memstress::doctor {

inline constexpr std::int32_t kNoFrames = -1;         // no Python frames recorded for it
inline constexpr std::int32_t kBeforeRecording = -2;  // allocated before the recording began
// The recorder's mark of what a convolution allocates (python/memstress/recorder_marks.py: MARK).
inline constexpr std::string_view kConvolutionMark = "memstress.convolution";

struct Site {
  std::string where;  // "models/llama.py:412 in forward": short, for tables
  std::string filename;
  std::int64_t line = 0;
  std::string function;
  bool user_code = false;          // a frame outside torch and the standard library
  std::vector<std::string> stack;  // one example stack, innermost first
};

struct OomFact {
  std::string device;
  std::uint64_t bytes = 0;                   // as PyTorch recorded it (rounded)
  std::optional<std::uint64_t> device_free;  // cudaMemGetInfo's free bytes when it happened
  std::int32_t site = -1;
};

struct SnapshotFacts {
  std::string source = "memstress trace";  // or "PyTorch memory snapshot", "RMM log"
  bool frames_recorded = false;
  std::vector<Site> sites;
  std::vector<std::int32_t> alloc_sites;         // by allocation id: an index into sites, or -1
  std::vector<std::uint64_t> segment_addresses;  // by segment id: where the driver put it (0: unknown)
  std::vector<OomFact> ooms;                     // the snapshot's oom entries, in order
  std::optional<std::string> alloc_conf;         // PYTORCH_CUDA_ALLOC_CONF as the program ran with it
  nlohmann::json recorder;                       // the recorder's notes (memstress.recorder), or null
  // The recorder's marks in PyTorch's user_metadata, where some allocation has one (those made inside a
  // convolution: python/memstress/recorder_marks.py): the values, and by allocation id an index into them
  // (-1: none).
  std::vector<std::string> marks;
  std::vector<std::int32_t> alloc_marks;

  // The site of allocation `id`, or -1.
  [[nodiscard]] std::int32_t site_of(std::uint64_t id) const noexcept {
    return id < alloc_sites.size() ? alloc_sites[id] : -1;
  }
  // Whether allocation `id` carries `mark`.
  [[nodiscard]] bool marked(std::uint64_t id, std::string_view mark) const noexcept;
  // A recorder's number (e.g. "device_total", "batch"), when it wrote one.
  [[nodiscard]] std::optional<std::uint64_t> recorded_number(const char* key) const;
};

// Reads the converter's facts; throws InputError naming `name` on anything malformed.
[[nodiscard]] SnapshotFacts read_facts(const std::filesystem::path& path, const std::string& name);

}  // namespace memstress::doctor
