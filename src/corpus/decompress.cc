#include "corpus/decompress.h"

#include <zlib.h>
#include <zstd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "util/error.h"

namespace attngeom {
namespace {

constexpr std::size_t kChunk = 1 << 16;

void check_limit(const std::string& out, std::size_t max_bytes, const std::filesystem::path& path) {
  if (out.size() > max_bytes) {
    throw InputError(path.string() + ": decompressed size exceeds the " + std::to_string(max_bytes) +
                     "-byte limit (--max-corpus-bytes)");
  }
}

std::string gunzip(const std::string& in, std::size_t max_bytes, const std::filesystem::path& path) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw InputError(path.string() + ": cannot start gzip decoder");
  std::string out;
  std::vector<char> buffer(kChunk);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer.data());
    zs.avail_out = static_cast<uInt>(buffer.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END && zs.avail_in > 0) {
      // Concatenated gzip members (as `cat a.gz b.gz` makes): continue with the next one.
      out.append(buffer.data(), buffer.size() - zs.avail_out);
      inflateReset(&zs);
      rc = Z_OK;
      continue;
    }
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&zs);
      throw InputError(path.string() + ": corrupt or truncated gzip data");
    }
    out.append(buffer.data(), buffer.size() - zs.avail_out);
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      inflateEnd(&zs);
      throw InputError(path.string() + ": truncated gzip data");
    }
    if (out.size() > max_bytes) {
      inflateEnd(&zs);
      check_limit(out, max_bytes, path);
    }
  }
  inflateEnd(&zs);
  return out;
}

std::string unzstd(const std::string& in, std::size_t max_bytes, const std::filesystem::path& path) {
  ZSTD_DCtx* ctx = ZSTD_createDCtx();
  std::string out;
  std::vector<char> buffer(ZSTD_DStreamOutSize());
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::size_t last = 1;
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
    last = ZSTD_decompressStream(ctx, &output, &input);
    if (ZSTD_isError(last)) {
      ZSTD_freeDCtx(ctx);
      throw InputError(path.string() + ": corrupt zstd data (" + ZSTD_getErrorName(last) + ")");
    }
    out.append(buffer.data(), output.pos);
    if (out.size() > max_bytes) {
      ZSTD_freeDCtx(ctx);
      check_limit(out, max_bytes, path);
    }
  }
  ZSTD_freeDCtx(ctx);
  if (last != 0) throw InputError(path.string() + ": truncated zstd data");
  return out;
}

}  // namespace

FileContent read_maybe_compressed(const std::filesystem::path& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open corpus file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string raw = buffer.str();
  const auto starts_with = [&](std::initializer_list<unsigned char> magic) {
    if (raw.size() < magic.size()) return false;
    std::size_t i = 0;
    for (const unsigned char m : magic) {
      if (static_cast<unsigned char>(raw[i++]) != m) return false;
    }
    return true;
  };
  if (starts_with({0x1f, 0x8b})) return {gunzip(raw, max_bytes, path), Compression::kGzip};
  if (starts_with({0x28, 0xb5, 0x2f, 0xfd})) return {unzstd(raw, max_bytes, path), Compression::kZstd};
  check_limit(raw, max_bytes, path);
  return {std::move(raw), Compression::kNone};
}

}  // namespace attngeom
