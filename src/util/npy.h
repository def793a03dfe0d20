#pragma once
// NumPy .npy (format 1.0) writer for float64/float32/int32 arrays, written atomically.
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace attngeom {

void write_npy(const std::filesystem::path& path, std::span<const double> data, const std::vector<std::int64_t>& shape);
void write_npy(const std::filesystem::path& path, std::span<const float> data, const std::vector<std::int64_t>& shape);
void write_npy(const std::filesystem::path& path, std::span<const std::int32_t> data,
               const std::vector<std::int64_t>& shape);

}  // namespace attngeom
