// SHA-256 through OpenSSL's EVP interface (sha256.hpp). The digest context is owned by a unique_ptr that
// frees it however we leave.
//
// The data is hashed from memory, not streamed from the file: ingest reads the whole file to parse it,
// and the hash must be of exactly the text that was parsed (a file rewritten between two reads would
// otherwise be stored under another content's key).

#include "harness/db/sha256.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <memory>

#include "harness/core/error.hpp"

namespace memstress::db {
namespace {

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

[[noreturn]] void fail(const char* call) {
  std::array<char, 256> reason{};
  ERR_error_string_n(ERR_get_error(), reason.data(), reason.size());
  throw EnvironmentError(fmt::format("OpenSSL cannot compute SHA-256: {} failed: {}", call, reason.data()));
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  const MdCtx ctx(EVP_MD_CTX_new());
  if (!ctx) {
    fail("EVP_MD_CTX_new");
  }
  if (EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    fail("EVP_DigestInit_ex(EVP_sha256)");
  }
  if (EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1) {
    fail("EVP_DigestUpdate");
  }
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest.data(), &length) != 1) {
    fail("EVP_DigestFinal_ex");
  }
  std::string hex;
  hex.reserve(2 * std::size_t{length});
  for (unsigned int i = 0; i < length; ++i) {
    hex += fmt::format("{:02x}", digest[i]);
  }
  return hex;
}

}  // namespace memstress::db
