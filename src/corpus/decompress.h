#pragma once
// Reads a whole corpus file, transparently decompressing gzip or zstd (detected by
// their magic bytes, not the file name). Output beyond `max_bytes` is an error, so a
// compression bomb cannot exhaust memory.
#include <cstddef>
#include <filesystem>
#include <string>

namespace attngeom {

enum class Compression { kNone, kGzip, kZstd };

struct FileContent {
  std::string bytes;
  Compression compression = Compression::kNone;
};

FileContent read_maybe_compressed(const std::filesystem::path& path, std::size_t max_bytes);

// The same on bytes already in memory; `source` names them in errors.
FileContent decompress_bytes(std::string raw, std::size_t max_bytes, const std::string& source);

}  // namespace attngeom
