#include "corpus/decompress.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "util/error.h"
#include "util/file_read.h"

namespace attngeom {
namespace {

constexpr std::size_t kChunk = 1 << 16;

[[noreturn]] void over_limit(std::size_t max_bytes, const std::string& source) {
  throw SettingError(
      {source + ": decompressed size exceeds the " + std::to_string(max_bytes) + "-byte limit per corpus file (",
       setting("max_corpus_bytes"), ")"});
}

// Frees the decoder on every exit path, exceptions included.
struct InflateGuard {
  z_stream* zs;
  ~InflateGuard() { inflateEnd(zs); }
};

std::string gunzip(const std::string& in, std::size_t max_bytes, const std::string& source) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw InputError(source + ": cannot start gzip decoder");
  const InflateGuard guard{&zs};
  std::string out;
  std::vector<char> buffer(kChunk);
  std::size_t consumed = 0;  // input handed to zlib so far (avail_in is 32-bit: feed in slices)
  const auto refill = [&] {
    if (zs.avail_in == 0 && consumed < in.size()) {
      const std::size_t slice = std::min<std::size_t>(in.size() - consumed, std::size_t{1} << 30);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + consumed));
      zs.avail_in = static_cast<uInt>(slice);
      consumed += slice;
    }
  };
  const auto input_left = [&] { return zs.avail_in > 0 || consumed < in.size(); };
  refill();
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer.data());
    zs.avail_out = static_cast<uInt>(buffer.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) throw InputError(source + ": corrupt gzip data");
    const std::size_t produced = buffer.size() - zs.avail_out;
    if (out.size() + produced > max_bytes) over_limit(max_bytes, source);
    out.append(buffer.data(), produced);
    refill();
    if (rc == Z_STREAM_END) {
      if (!input_left()) break;
      // Zero bytes after the last member are padding (tape blocks), as GNU gzip reads them.
      const std::size_t next = consumed - zs.avail_in;
      if (in.find_first_not_of('\0', next) == std::string::npos) break;
      // Concatenated gzip members (as `cat a.gz b.gz` makes): continue with the next one.
      if (inflateReset(&zs) != Z_OK) throw InputError(source + ": corrupt gzip data");
      continue;
    }
    // No progress possible: the stream ended before its end marker.
    if (produced == 0 && !input_left()) throw InputError(source + ": truncated gzip data");
    if (rc == Z_BUF_ERROR && produced == 0) throw InputError(source + ": corrupt gzip data");
  }
  return out;
}

struct ZstdDeleter {
  void operator()(ZSTD_DCtx* ctx) const { ZSTD_freeDCtx(ctx); }
};

std::string unzstd(const std::string& in, std::size_t max_bytes, const std::string& source) {
  const std::unique_ptr<ZSTD_DCtx, ZstdDeleter> ctx(ZSTD_createDCtx());
  if (!ctx) throw InputError(source + ": cannot start zstd decoder");
  std::string out;
  std::vector<char> buffer(ZSTD_DStreamOutSize());
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  std::size_t last = 1;
  // Keep going while input remains, or while a frame is unfinished and the last call filled
  // the buffer (more output may be pending). `last` is 0 exactly when a frame has ended.
  bool full = true;
  while (input.pos < input.size || (full && last != 0)) {
    ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
    const std::size_t before = input.pos;
    last = ZSTD_decompressStream(ctx.get(), &output, &input);
    if (ZSTD_isError(last)) throw InputError(source + ": corrupt zstd data (" + ZSTD_getErrorName(last) + ")");
    if (out.size() + output.pos > max_bytes) over_limit(max_bytes, source);
    out.append(buffer.data(), output.pos);
    full = output.pos == output.size;
    if (!full && output.pos == 0 && input.pos == before) break;  // no progress: cannot go on
  }
  if (last != 0) throw InputError(source + ": truncated zstd data");
  return out;
}

bool starts_with(const std::string& raw, std::initializer_list<unsigned char> magic) {
  if (raw.size() < magic.size()) return false;
  std::size_t i = 0;
  for (const unsigned char m : magic) {
    if (static_cast<unsigned char>(raw[i++]) != m) return false;
  }
  return true;
}

}  // namespace

FileContent decompress_bytes(std::string raw, std::size_t max_bytes, const std::string& source) {
  if (starts_with(raw, {0x1f, 0x8b})) return {gunzip(raw, max_bytes, source), Compression::kGzip};
  if (starts_with(raw, {0x28, 0xb5, 0x2f, 0xfd})) return {unzstd(raw, max_bytes, source), Compression::kZstd};
  if (raw.size() > max_bytes) over_limit(max_bytes, source);
  return {std::move(raw), Compression::kNone};
}

FileContent read_maybe_compressed(const std::filesystem::path& path, std::size_t max_bytes) {
  // The stored file is capped too: compressing incompressible data adds far less than 1/64,
  // so a stored file beyond the cap plus that margin cannot decompress within the cap.
  const std::size_t stored_cap =
      max_bytes > (std::size_t{1} << 62) ? max_bytes : max_bytes + max_bytes / 64 + (1 << 20);
  return decompress_bytes(read_file_bytes(path, stored_cap, "corpus file"), max_bytes, path.string());
}

}  // namespace attngeom
