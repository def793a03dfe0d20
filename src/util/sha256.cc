#include "util/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "util/error.h"

namespace attngeom {
namespace {

struct DigestContext {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  DigestContext() { ATTNGEOM_CHECK(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1); }
  void update(const void* data, std::size_t n) { ATTNGEOM_CHECK(EVP_DigestUpdate(ctx.get(), data, n) == 1); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    ATTNGEOM_CHECK(EVP_DigestFinal_ex(ctx.get(), digest, &len) == 1);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 15];
    }
    return out;
  }
};

}  // namespace

std::string sha256_hex(std::span<const std::uint8_t> bytes) {
  DigestContext d;
  d.update(bytes.data(), bytes.size());
  return d.hex();
}

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open for hashing");
  DigestContext d;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    d.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  return d.hex();
}

}  // namespace attngeom
