#include "harness/burn/engine.hpp"

#include <algorithm>

namespace memstress {
namespace {

constexpr std::size_t kMaxHashes = 4;
constexpr std::size_t kMaxNotes = 5;

}  // namespace

void note_hash(std::vector<std::uint64_t>& hashes, std::uint64_t hash) {
  if (hashes.size() < kMaxHashes && std::find(hashes.begin(), hashes.end(), hash) == hashes.end()) {
    hashes.push_back(hash);
  }
}

void note_error(std::vector<std::string>& notes, std::string note) {
  if (notes.size() < kMaxNotes) {
    notes.push_back(std::move(note));
  }
}

}  // namespace memstress
