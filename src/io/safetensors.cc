#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "util/error.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

// Element sizes of every dtype the format defines; only some can be computed with.
std::optional<std::size_t> element_size(std::string_view dtype) {
  static const std::map<std::string_view, std::size_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  const auto it = kSizes.find(dtype);
  if (it == kSizes.end()) return std::nullopt;
  return it->second;
}

std::optional<DType> computable_dtype(std::string_view dtype) {
  if (dtype == "F32") return DType::kF32;
  if (dtype == "F16") return DType::kF16;
  if (dtype == "BF16") return DType::kBF16;
  if (dtype == "I32") return DType::kI32;
  if (dtype == "F64") return DType::kF64;
  return std::nullopt;
}

std::uint64_t read_u64_le(const std::uint8_t* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& spec,
                             std::span<const std::uint8_t> data_region, const std::string& source) {
  const std::string where = source + ": tensor '" + name + "'";
  if (!spec.is_object()) throw InputError(where + ": header entry is not an object");
  const auto dtype_it = spec.find("dtype");
  const auto shape_it = spec.find("shape");
  const auto offsets_it = spec.find("data_offsets");
  if (dtype_it == spec.end() || !dtype_it->is_string() || shape_it == spec.end() || !shape_it->is_array() ||
      offsets_it == spec.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    throw InputError(where + ": expected string 'dtype', array 'shape' and 2-element 'data_offsets'");
  }
  SafetensorsEntry entry;
  entry.name = name;
  entry.dtype_name = dtype_it->get<std::string>();
  const auto elem_size = element_size(entry.dtype_name);
  if (!elem_size) throw InputError(where + ": unknown dtype '" + entry.dtype_name + "'");
  entry.dtype = computable_dtype(entry.dtype_name);

  std::uint64_t nbytes = *elem_size;
  for (const auto& dim : *shape_it) {
    if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) {
      throw InputError(where + ": shape entries must be non-negative integers");
    }
    const auto d = dim.get<std::uint64_t>();
    if (__builtin_mul_overflow(nbytes, d, &nbytes)) {
      throw InputError(where + ": shape times dtype size overflows 64 bits");
    }
    entry.shape.push_back(static_cast<std::int64_t>(d));
  }
  for (const auto& offset : *offsets_it) {
    if (!offset.is_number_integer() || offset.get<std::int64_t>() < 0) {
      throw InputError(where + ": data_offsets must be non-negative integers");
    }
  }
  const auto begin = (*offsets_it)[0].get<std::uint64_t>();
  const auto end = (*offsets_it)[1].get<std::uint64_t>();
  if (begin > end || end > data_region.size()) {
    // Offsets in order but past the end: the header is whole, so the file was cut short.
    const std::string cut_short = begin <= end ? "; the file is truncated (a copy or download cut short?)" : "";
    throw InputError(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                     ") out of range of the " + std::to_string(data_region.size()) + "-byte data region" + cut_short);
  }
  if (end - begin != nbytes) {
    throw InputError(where + ": data_offsets span " + std::to_string(end - begin) + " bytes, but dtype " +
                     entry.dtype_name + " and its shape need " + std::to_string(nbytes));
  }
  entry.data = data_region.subspan(begin, end - begin);
  return entry;
}

}  // namespace

const SafetensorsEntry* SafetensorsHeader::find(const std::string& name) const {
  for (const auto& entry : entries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

SafetensorsHeader parse_safetensors(std::span<const std::uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8) {
    throw InputError(source + ": truncated safetensors file (" + std::to_string(bytes.size()) +
                     " bytes; expected at least the 8-byte header length)");
  }
  const std::uint64_t header_len = read_u64_le(bytes.data());
  if (header_len > bytes.size() - 8) {
    throw InputError(source + ": header length " + std::to_string(header_len) + " runs past the end of the " +
                     std::to_string(bytes.size()) + "-byte file (truncated or corrupt)");
  }
  if (header_len > kMaxSafetensorsHeaderBytes) {
    throw InputError(source + ": header length " + std::to_string(header_len) + " exceeds the " +
                     std::to_string(kMaxSafetensorsHeaderBytes) + "-byte limit");
  }
  const auto header_bytes = bytes.subspan(8, header_len);
  const auto data_region = bytes.subspan(8 + header_len);

  nlohmann::json header;
  try {
    const std::string_view text(reinterpret_cast<const char*>(header_bytes.data()), header_bytes.size());
    header = parse_json(text, source);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": malformed safetensors header JSON (" + std::string(e.what()) + ")");
  }
  if (!header.is_object()) throw InputError(source + ": safetensors header is not a JSON object");

  SafetensorsHeader result;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") {
      if (!spec.is_object()) throw InputError(source + ": __metadata__ is not an object");
      for (const auto& [key, value] : spec.items()) {
        if (!value.is_string()) throw InputError(source + ": __metadata__ value '" + key + "' is not a string");
        result.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    result.entries.push_back(parse_entry(name, spec, data_region, source));
  }

  // Tensors must not share bytes: sort by start and check each starts after the last ends.
  std::sort(result.entries.begin(), result.entries.end(),
            [](const auto& a, const auto& b) { return a.data.data() < b.data.data(); });
  for (std::size_t i = 1; i < result.entries.size(); ++i) {
    const auto& prev = result.entries[i - 1];
    const auto& cur = result.entries[i];
    if (!cur.data.empty() && cur.data.data() < prev.data.data() + prev.data.size()) {
      throw InputError(source + ": tensors '" + prev.name + "' and '" + cur.name + "' have overlapping data_offsets");
    }
  }
  return result;
}

}  // namespace attngeom
