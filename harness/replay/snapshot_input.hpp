#pragma once

// `memstress replay run.snapshot.pickle`: replay reads memstress traces; a PyTorch memory snapshot or an
// RMM log is converted first, by the converter installed with memstress (python3 -m memstress.convert,
// python/memstress/convert.py under the data directory, harness/core/data_dir.hpp), into a temporary trace
// that lives as long as the ConvertedTrace. One converter serves `memstress replay`, users who convert by
// hand and the tests, so the contract of harness/trace/trace_format.md's "Converted traces" is kept in one
// place.

#include <filesystem>

#include "harness/core/subprocess.hpp"

namespace memstress::replay {

enum class InputKind { memstress_trace, torch_snapshot, rmm_log };

// What `path` holds, told by its first bytes (gzip-compressed or not), not by its name: a pickle (PyTorch's
// snapshot), an RMM log's CSV header, or anything else (read as a memstress trace, which names what is
// wrong with it). Throws InputError naming the file when it cannot be read.
[[nodiscard]] InputKind input_kind(const std::filesystem::path& path);

class ConvertedTrace {
 public:
  // Runs the converter on `input` (with `with_facts`, also asking for the facts the trace has no column
  // for: --facts, for `memstress doctor`); throws InputError (exit 2) when it rejects the file (its
  // message, naming the file, is on stderr already), EnvironmentError (exit 3) when it cannot run.
  explicit ConvertedTrace(const std::filesystem::path& input, bool with_facts = false);

  [[nodiscard]] const std::filesystem::path& trace() const noexcept { return trace_; }
  // The facts file (harness/doctor/facts.hpp); empty unless asked for.
  [[nodiscard]] const std::filesystem::path& facts() const noexcept { return facts_; }

 private:
  TempDir dir_;
  std::filesystem::path trace_;
  std::filesystem::path facts_;
};

}  // namespace memstress::replay
