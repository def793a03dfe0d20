#pragma once
// Defensive reader of the safetensors format: an 8-byte little-endian header length,
// a JSON header {name: {dtype, shape, data_offsets}}, then the data region.
// Every count, length and offset is checked against the bytes that are really there.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "util/half.h"

namespace attngeom {

struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;      // as written in the header, e.g. "BF16", "I64"
  std::optional<DType> dtype;  // set when attngeom can compute with it
  std::vector<std::int64_t> shape;
  std::span<const std::uint8_t> data;  // bytes inside the data region
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in data-offset order
  std::map<std::string, std::string> metadata;
  const SafetensorsEntry* find(const std::string& name) const;
};

// Largest header we accept; real checkpoints stay far below this.
inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Parses and validates `bytes` (a whole file). `source` names the file in errors.
// Throws InputError on anything malformed.
SafetensorsHeader parse_safetensors(std::span<const std::uint8_t> bytes, const std::string& source);

}  // namespace attngeom
