#include "io/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace attngeom {

SafetensorsWriter::SafetensorsWriter(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                                     const std::map<std::string, std::string>& metadata)
    : file_(path) {
  nlohmann::ordered_json header;
  header["__metadata__"] = metadata;
  std::size_t data_bytes = 0;
  std::vector<std::pair<std::string, Placement>> relative;
  for (const auto& spec : tensors) {
    std::size_t size = dtype_size(spec.dtype);
    for (const auto dim : spec.shape) size *= static_cast<std::size_t>(dim);
    header[spec.name] = {
        {"dtype", dtype_name(spec.dtype)}, {"shape", spec.shape}, {"data_offsets", {data_bytes, data_bytes + size}}};
    relative.push_back({spec.name, {data_bytes, size}});
    data_bytes += size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data region 8-byte aligned
  std::uint8_t length_le[8];
  for (int i = 0; i < 8; ++i) length_le[i] = static_cast<std::uint8_t>(text.size() >> (8 * i));

  const std::size_t data_start = 8 + text.size();
  file_.resize(data_start + data_bytes);
  file_.write_at(0, length_le, 8);
  file_.write_at(8, text.data(), text.size());
  for (const auto& [name, placement] : relative) {
    placements_[name] = {data_start + placement.begin, placement.size};
  }
}

void SafetensorsWriter::write(const std::string& name, std::size_t byte_offset, const void* data, std::size_t bytes) {
  const auto it = placements_.find(name);
  ATTNGEOM_CHECK(it != placements_.end());
  ATTNGEOM_CHECK(byte_offset + bytes <= it->second.size);
  file_.write_at(it->second.begin + byte_offset, data, bytes);
}

}  // namespace attngeom
