// The caching allocator's settings in PYTORCH_CUDA_ALLOC_CONF syntax (`--alloc-conf`, and PyTorch's own
// variable when a snapshot is replayed): AllocConfig::parse (harness/alloc/alloc_config.hpp), and the
// bounds it promises on what it accepts.

#include <bit>

#include "fuzz/fuzz_target.hpp"
#include "harness/alloc/alloc_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace memstress;
  const std::string_view input = fuzz::text(data, size);
  return fuzz::run([&] {
    const AllocConfig config = AllocConfig::parse(input, "--alloc-conf");
    for (const std::uint32_t d : config.roundup_power2_divisions) {
      fuzz::check(d == 0 || std::has_single_bit(d), "roundup_power2_divisions: not 0 nor a power of 2");
    }
    fuzz::check(config.garbage_collection_threshold >= 0.0 && config.garbage_collection_threshold < 1.0,
                "garbage_collection_threshold out of [0, 1)");
    fuzz::check(!config.memory_fraction || (*config.memory_fraction > 0.0 && *config.memory_fraction <= 1.0),
                "per_process_memory_fraction out of (0, 1]");
    fuzz::check(config.max_split_size >= (20ULL << 20), "max_split_size below 20 MiB");
    for (int shift = 0; shift < 64; shift += 7) {
      static_cast<void>(config.divisions_for(std::uint64_t{1} << shift));
    }
    static_cast<void>(config.divisions_for(0));
  });
}
