#pragma once
// Reading a whole small input file (config.json, an index, run.json, a text) defensively:
// it must be a regular file (a FIFO or device would block or never end), symlink loops and
// permission problems are reported with the system's reason, and a size cap bounds memory.
#include <cstddef>
#include <filesystem>
#include <string>

namespace attngeom {

// Throws InputError "PATH: <what> not found" / "PATH: cannot open: <reason>" /
// "PATH: not a regular file" / "PATH: larger than the N-byte limit for <what>".
std::string read_file_bytes(const std::filesystem::path& path, std::size_t max_bytes, const std::string& what);

}  // namespace attngeom
