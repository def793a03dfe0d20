#pragma once
// SHA-256 digests (OpenSSL) as lowercase hex, for provenance records.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace attngeom {

std::string sha256_hex(std::span<const std::uint8_t> bytes);
std::string sha256_file(const std::filesystem::path& path);  // throws InputError

}  // namespace attngeom
