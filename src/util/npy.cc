#include "util/npy.h"

#include <string>

#include "util/atomic_file.h"
#include "util/error.h"

namespace attngeom {
namespace {

void write_array(const std::filesystem::path& path, const void* data, std::size_t bytes, const char* descr,
                 std::size_t elements, const std::vector<std::int64_t>& shape) {
  std::size_t count = 1;
  std::string shape_text = "(";
  for (const auto dim : shape) {
    count *= static_cast<std::size_t>(dim);
    shape_text += std::to_string(dim) + ",";
    if (shape.size() > 1) shape_text += " ";
  }
  if (shape.size() > 1) shape_text.resize(shape_text.size() - 2);
  shape_text += ")";
  ATTNGEOM_CHECK(count == elements);
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_text + ", }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'.
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string prefix = "\x93NUMPY";
  prefix += '\x01';
  prefix += '\x00';
  prefix += static_cast<char>(header.size() & 0xff);
  prefix += static_cast<char>(header.size() >> 8);
  AtomicFile file(path);
  file.write_at(0, prefix.data(), prefix.size());
  file.write_at(prefix.size(), header.data(), header.size());
  file.write_at(prefix.size() + header.size(), data, bytes);
  file.commit();
}

}  // namespace

void write_npy(const std::filesystem::path& path, std::span<const double> data,
               const std::vector<std::int64_t>& shape) {
  write_array(path, data.data(), data.size_bytes(), "<f8", data.size(), shape);
}
void write_npy(const std::filesystem::path& path, std::span<const float> data, const std::vector<std::int64_t>& shape) {
  write_array(path, data.data(), data.size_bytes(), "<f4", data.size(), shape);
}
void write_npy(const std::filesystem::path& path, std::span<const std::int32_t> data,
               const std::vector<std::int64_t>& shape) {
  write_array(path, data.data(), data.size_bytes(), "<i4", data.size(), shape);
}

}  // namespace attngeom
