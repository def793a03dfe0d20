#pragma once
// Writes a standard safetensors file whose tensor list is known up front. The header
// is written first; tensor bytes then go to their final offsets, from any thread.
// Nothing appears at the output path until commit().
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "util/atomic_file.h"
#include "util/half.h"

namespace attngeom {

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
};

class SafetensorsWriter {
 public:
  SafetensorsWriter(const std::filesystem::path& path, const std::vector<TensorSpec>& tensors,
                    const std::map<std::string, std::string>& metadata);

  // Writes `bytes` bytes at `byte_offset` inside tensor `name`. Thread-safe.
  void write(const std::string& name, std::size_t byte_offset, const void* data, std::size_t bytes);
  void commit() { file_.commit(); }

 private:
  struct Placement {
    std::size_t begin;  // absolute file offset
    std::size_t size;
  };
  AtomicFile file_;
  std::map<std::string, Placement> placements_;
};

}  // namespace attngeom
