#include "harness/results/compressed.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/core/units.hpp"

#ifdef MEMSTRESS_HAVE_LZMA
#include <lzma.h>
#endif

namespace memstress {
namespace {

constexpr std::size_t kPiece = std::size_t{1} << 20U;
constexpr std::string_view kXzMagic{
    "\xFD"
    "7zXZ\0",
    6};
constexpr std::string_view kGzipMagic{"\x1F\x8B", 2};

[[noreturn]] void too_large(std::uint64_t max_bytes) {
  throw InputError(fmt::format("decompresses to more than the {} a results file may be (docs/limits.md)",
                               human_bytes(max_bytes)));
}

std::string gunzip(const std::string& data, std::uint64_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {  // 16: the gzip wrapper
    throw InputError("gzip: cannot start decompressing");
  }
  std::string out;
  std::vector<unsigned char> piece(kPiece);  // on the heap: fuzzers' and workers' stacks are small
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));  // zlib's API is not const
  z.avail_in = static_cast<uInt>(data.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = piece.data();
    z.avail_out = static_cast<uInt>(piece.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw InputError(fmt::format("gzip: damaged or cut short ({})", z.msg != nullptr ? z.msg : "no end"));
    }
    out.append(reinterpret_cast<const char*>(piece.data()), piece.size() - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      too_large(max_bytes);
    }
  }
  inflateEnd(&z);
  return out;
}

#ifdef MEMSTRESS_HAVE_LZMA
std::string unxz(const std::string& data, std::uint64_t max_bytes) {
  lzma_stream z = LZMA_STREAM_INIT;
  // The decoder's own memory is bounded too (a dictionary of up to 256 MiB), whatever the header asks for.
  constexpr std::uint64_t kDecoderMemory = std::uint64_t{256} << 20U;
  if (lzma_stream_decoder(&z, kDecoderMemory, LZMA_CONCATENATED) != LZMA_OK) {
    throw InputError("xz: cannot start decompressing");
  }
  std::string out;
  std::vector<std::uint8_t> piece(kPiece);
  z.next_in = reinterpret_cast<const std::uint8_t*>(data.data());
  z.avail_in = data.size();
  lzma_ret rc = LZMA_OK;
  while (rc != LZMA_STREAM_END) {
    z.next_out = piece.data();
    z.avail_out = piece.size();
    rc = lzma_code(&z, LZMA_FINISH);
    if (rc != LZMA_OK && rc != LZMA_STREAM_END) {
      lzma_end(&z);
      throw InputError(fmt::format("xz: {}", rc == LZMA_MEMLIMIT_ERROR
                                                 ? "needs more memory to decompress than "
                                                   "256 MiB"
                                             : rc == LZMA_BUF_ERROR ? "cut short"
                                                                    : "damaged"));
    }
    out.append(reinterpret_cast<const char*>(piece.data()), piece.size() - z.avail_out);
    if (out.size() > max_bytes) {
      lzma_end(&z);
      too_large(max_bytes);
    }
  }
  lzma_end(&z);
  return out;
}
#endif

}  // namespace

std::string decompressed(std::string data, std::uint64_t max_bytes) {
  const std::string_view head(data.data(), std::min<std::size_t>(data.size(), kXzMagic.size()));
  if (head.starts_with(kXzMagic)) {
#ifdef MEMSTRESS_HAVE_LZMA
    return unxz(data, max_bytes);
#else
    throw InputError(
        "xz-compressed, and this memstress was built without liblzma (liblzma-dev): decompress it "
        "first (unxz)");
#endif
  }
  if (head.starts_with(kGzipMagic)) {
    return gunzip(data, max_bytes);
  }
  return data;
}

}  // namespace memstress
