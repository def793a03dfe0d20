#pragma once
// A read-only memory map of a whole file. Move-only; unmaps on destruction.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace attngeom {

class MappedFile {
 public:
  // Throws InputError naming the path if it cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// Drops the resident pages of a read-only file mapping that lie wholly inside
// [data, data + bytes): the process's resident set shrinks by them, and a later read maps them
// in again from the file. For mapped bytes that are copied elsewhere and not read again.
void release_mapped_pages(const void* data, std::size_t bytes);

}  // namespace attngeom
