#include "harness/memory/uuid.hpp"

#include <fmt/format.h>

namespace memstress {

std::string format_gpu_uuid(const cudaUUID_t& uuid) {
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      text += '-';
    }
    text += fmt::format("{:02x}", static_cast<unsigned char>(uuid.bytes[i]));
  }
  return text;
}

}  // namespace memstress
